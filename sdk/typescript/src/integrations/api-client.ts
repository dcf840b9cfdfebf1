// The OpenAI and Anthropic clients share one generated core: every endpoint method calls
// `client.post(path, options)`, whose options may be a promise, and returns an `APIPromise`.
// Metering at that seam keeps the client the same client: the guard runs inside the options
// promise (nothing is sent until it passes, retries happen below it), the APIPromise stays the
// SDK's own (`.withResponse()`, `.asResponse()`, `_thenUnwrap` for `.parse()` and the stream
// helpers), and a helper that re-enters `create()` still makes one post, so one event.
import type { Meter } from "../meter.ts";
import { MeterError, MeterTypeError } from "../errors.ts";
import { BackgroundCalls, type BackgroundRoute } from "./background.ts";
import {
  MeteredCall,
  checkArguments,
  meterIterator,
  resolveUser,
  settleWhenCollected,
  type IntegrationOptions,
  type Observer,
  type StreamProgress,
  type Usage,
} from "./metering.ts";

/** How one endpoint is metered. */
export interface Route {
  /** Reads the request: the model, the input estimate, and the body to send in its place. */
  prepare(body: any): Prepared;
  /** Usage of a complete, non-streamed response. */
  usage(data: any): Usage;
  /** A reader for one stream: feeds each item to `progress`, returns what the caller gets. */
  observer(progress: StreamProgress, prepared: Prepared): Observer<any>;
  /** The id of the background response a stream left before its end still runs as, else undefined. */
  cutRunning?(progress: StreamProgress, prepared: Prepared): string | undefined;
}

export interface Prepared {
  model: string | undefined;
  /** What the model reads (see promptOf), for the input estimate. */
  prompt: unknown;
  /** The request's output limit (see outputLimit), for the estimate. */
  maxOutputTokens?: number | undefined;
  body: any;
  /** The wrapper asked for stream usage the caller did not request. */
  addedUsage?: boolean;
}

interface StainlessClient {
  post(path: string, opts?: unknown): any;
  get(path: string, opts?: unknown): any;
}

const METERED = Symbol.for("meterline.metered");

function isThenable(x: unknown): x is PromiseLike<unknown> {
  return typeof (x as PromiseLike<unknown> | undefined)?.then === "function";
}

/** Replaces the instance's `post` with a metered one and returns the same object. */
export function meterPosts<C extends object>(
  client: C,
  meter: Meter,
  options: IntegrationOptions,
  integration: { name: string; provider: string; routes: Record<string, Route>; background?: BackgroundRoute },
): C {
  checkArguments(integration.name, meter, options);
  const target = client as C & StainlessClient & { [METERED]?: true };
  if (typeof target.post !== "function") throw new MeterTypeError(`${integration.name}: expected a client instance`);
  if (target[METERED]) {
    throw new MeterError(`${integration.name}: this client is metered already; wrap a client once and pass the user (and the conversation) with meter.withUser(userId, fn, { session_id })`);
  }
  const post = target.post;
  const background = integration.background && new BackgroundCalls(integration.background);
  Object.defineProperty(target, METERED, { value: true });
  if (background) {
    const get = target.get;
    target.get = function meteredGet(this: unknown, path: string, opts?: unknown) {
      return background.read("get", path, get.call(this, path, opts));
    };
  }
  target.post = function meteredPost(this: unknown, path: string, opts?: unknown) {
    const route = integration.routes[path.split("?")[0]!];
    if (!route) return background ? background.read("post", path, post.call(this, path, opts)) : post.call(this, path, opts);

    let call: MeteredCall | undefined;
    let prepared: Prepared | undefined;
    // The guard, before anything is sent: the call is reserved, and the options to send returned.
    const guard = (o: any, user: string): any => {
      const p = route.prepare(o?.body ?? {});
      prepared = p;
      const sent = p.body === o?.body ? o : { ...o, body: p.body };
      const started = MeteredCall.start(meter, options, {
        user_id: user,
        provider: integration.provider,
        model: p.model,
        prompt: p.prompt,
        max_output_tokens: p.maxOutputTokens,
      });
      if (started instanceof MeteredCall) {
        call = started;
        return sent;
      }
      return started.then((c) => {
        call = c;
        return sent;
      });
    };
    // The user is read now: the caller's async context is current here, not in a later tick.
    // The endpoints pass their options as an object, guarded in this tick then (a warm user
    // costs no promise); a failed guard rejects the call's promise either way.
    let guarded: unknown;
    try {
      const user = resolveUser(meter, options, integration.name);
      guarded = isThenable(opts) ? opts.then((o) => guard(o, user)) : guard(opts, user);
    } catch (err) {
      guarded = Promise.reject(err);
    }

    const promise = post.call(this, path, guarded);
    promise.responsePromise?.then?.(
      // `.asResponse()` hands the body to the caller and the SDK never parses it: such a call
      // is settled with its estimate once the response is collected (a no-op when parsed).
      (props: { response?: object }) => props?.response && call && settleWhenCollected(props.response, call),
      // Failed after its retries, or aborted before an answer.
      (err: unknown) => call?.fail(isUserAbort(err)),
    );
    return promise._thenUnwrap((data: any) => {
      if (!call || !prepared || call.settled) return data;
      if (!prepared.body?.stream || !data || typeof data.iterator !== "function") {
        // Answered before it ran: settled when this client reads it final (background.ts).
        if (!background?.holdPending(data, call)) call.commit(route.usage(data));
        return data;
      }
      // The SDK's Stream keeps its controller, tee() and toReadableStream(); only the source
      // iterator it reads from is replaced, so every way of reading it is metered.
      const metered = call;
      const progress = metered.streaming();
      const source = data.iterator.bind(data);
      const observe = route.observer(progress, prepared);
      const p = prepared;
      const hold = background && route.cutRunning && (() => background.holdCut(route.cutRunning!(progress, p), metered));
      data.iterator = () => meterIterator(source(), metered, progress, observe, hold || undefined);
      settleWhenCollected(data, metered);
      return data;
    });
  };
  return client;
}

/** The caller's abort, as both SDKs raise it: Anthropic's error names itself, openai's keeps Error's name. */
function isUserAbort(err: unknown): boolean {
  return (err as Error)?.name === "APIUserAbortError" || (err as object)?.constructor?.name === "APIUserAbortError";
}
