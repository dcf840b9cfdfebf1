// `.asResponse()` hands the provider's HTTP response to the caller, and the SDK never parses
// its body. The caller gets a response whose body passes through a reader that sees each chunk
// on its way, untouched: a JSON answer is metered with its usage once read to its end, a stream
// (server-sent events) item by item as the SDK's own Stream would read it. A body left unread is
// settled with its estimate when collected (api-client.ts); one cancelled part way, with what it
// showed.
import type { MeteredCall, Observer, StreamProgress } from "./metering.ts";

/** How a raw body is metered: a complete answer's data, or a stream's items. */
export type RawBody =
  | { kind: "json"; done(data: unknown): void }
  | { kind: "events"; progress: StreamProgress; observe: Observer<unknown>; hold?: (() => boolean) | undefined };

/**
 * The response the caller gets in place of `response`: the same status, headers and bytes, read
 * through `body`. `response` stays reachable while its body is, so that what settles the call
 * when the response is collected unread runs only once nothing can read it any more.
 */
export function meterRawBody(response: Response, call: MeteredCall, body: RawBody): Response {
  const source = response.body;
  if (!source || call.settled) return response;
  const reader = source.getReader();
  const sink = body.kind === "json" ? jsonSink(call, body.done) : eventSink(call, body);
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const r = await reader.read().catch((err: unknown) => {
        sink.end(false);
        controller.error(err);
        return undefined;
      });
      if (!r) return;
      if (r.done) {
        sink.end(true);
        controller.close();
        return;
      }
      sink.push(r.value);
      controller.enqueue(r.value);
    },
    cancel(reason) {
      void response;
      sink.end(false);
      return reader.cancel(reason);
    },
  });
  const copy = new Response(stream, { status: response.status, statusText: response.statusText, headers: response.headers });
  // url and redirected are read-only on a Response built here; the caller sees the provider's.
  Object.defineProperties(copy, { url: { value: response.url }, redirected: { value: response.redirected } });
  return copy;
}

interface Sink {
  push(chunk: Uint8Array): void;
  /** `whole`: read to its end; otherwise cancelled or broken. */
  end(whole: boolean): void;
}

/** A complete answer: parsed once read whole; metering never throws into the caller's read. */
function jsonSink(call: MeteredCall, done: (data: unknown) => void): Sink {
  const decoder = new TextDecoder();
  let text = "";
  let finished = false;
  return {
    push: (chunk) => void (text += decoder.decode(chunk, { stream: true })),
    end(whole) {
      if (finished) return;
      finished = true;
      let data: unknown;
      try {
        data = whole ? JSON.parse(text + decoder.decode()) : undefined;
      } catch {
        data = undefined;
      }
      text = "";
      if (data !== undefined) done(data);
      else call.settle();
    },
  };
}

/**
 * A stream: each event's data shown to the route's observer; settled at the end or when the read
 * stops, as meterIterator settles a stream the SDK reads.
 */
function eventSink(call: MeteredCall, body: Extract<RawBody, { kind: "events" }>): Sink {
  const events = new EventData();
  let finished = false;
  let broken = false;
  return {
    push(chunk) {
      for (const data of events.push(chunk)) {
        // What the observer returns (the item the caller would get) is not used: the caller
        // reads the bytes. An item it cannot read leaves the call to be settled with what the
        // others showed; the caller's read goes on.
        if (broken) return;
        try {
          body.observe(data);
        } catch {
          broken = true;
        }
      }
    },
    end() {
      if (finished) return;
      finished = true;
      if (!body.hold?.()) call.settle(body.progress);
    },
  };
}

/**
 * Server-sent events split as the SDKs' decoders split them, however the bytes were cut: a
 * blank line ends an event, its `data:` lines join with newlines; `[DONE]` and other data that
 * is not JSON carry nothing.
 */
export class EventData {
  readonly #decoder = new TextDecoder();
  #buffered = "";

  /** The data of the events `chunk` completes, parsed. */
  push(chunk: Uint8Array): unknown[] {
    this.#buffered += this.#decoder.decode(chunk, { stream: true });
    const out: unknown[] = [];
    let end: RegExpExecArray | null;
    while ((end = EVENT_END.exec(this.#buffered))) {
      const data = dataOf(this.#buffered.slice(0, end.index));
      this.#buffered = this.#buffered.slice(end.index + end[0].length);
      if (data !== undefined) out.push(data);
    }
    return out;
  }
}

const EVENT_END = /\r\n\r\n|\n\n|\r\r/;

/** The JSON of one event's `data:` lines, or undefined (none, `[DONE]`, not JSON). */
function dataOf(event: string): unknown {
  const lines: string[] = [];
  for (const line of event.split(/\r\n|\n|\r/)) {
    if (line === "data" || line.startsWith("data:")) lines.push(line.slice(5).replace(/^ /, ""));
  }
  if (lines.length === 0) return undefined;
  const data = lines.join("\n");
  if (data === "[DONE]") return undefined;
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}
