// The OpenAI and Anthropic clients share one generated core: every endpoint method calls
// `client.post(path, options)`, whose options may be a promise, and returns an `APIPromise`.
// Metering at that seam keeps the client the same client: the guard runs inside the options
// promise (nothing is sent until it passes, retries happen below it), the APIPromise stays the
// SDK's own (`.withResponse()`, `.asResponse()`, `_thenUnwrap` for `.parse()` and the stream
// helpers), and a helper that re-enters `create()` still makes one post, so one event.
import type { Meter } from "../meter.ts";
import { MeterError, MeterTypeError } from "../errors.ts";
import { BackgroundCalls, type BackgroundRoute } from "./background.ts";
import { meterRawBody } from "./raw-body.ts";
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
      // A response nobody parses nor reads (an `.asResponse()` dropped unread) is settled with
      // its estimate once collected (a no-op when the call was metered).
      (props: { response?: object }) => props?.response && call && settleWhenCollected(props.response, call),
      // Failed after its retries, or aborted before an answer.
      (err: unknown) => call?.fail(isUserAbort(err)),
    );
    const unwrapped = promise._thenUnwrap((data: any) => {
      if (!call || !prepared || call.settled) return data;
      if (!prepared.body?.stream || !data || typeof data.iterator !== "function") {
        answered(route, background, call, data);
        return data;
      }
      // The SDK's Stream keeps its controller, tee() and toReadableStream(); only the source
      // iterator it reads from is replaced, so every way of reading it is metered.
      const metered = call;
      const progress = metered.streaming();
      const source = data.iterator.bind(data);
      const observe = route.observer(progress, prepared);
      const hold = holdOf(route, background, metered, prepared, progress);
      data.iterator = () => meterIterator(source(), metered, progress, observe, hold);
      settleWhenCollected(data, metered);
      return data;
    });
    // `.asResponse()` gives the caller the HTTP response, whose body the SDK never parses: it
    // is metered from the bytes as the caller reads them (raw-body.ts).
    meterAsResponse(unwrapped, (response) => {
      const c = call;
      const p = prepared;
      if (!c || !p || c.settled) return response;
      if (!p.body?.stream) return meterRawBody(response, c, { kind: "json", done: (data) => answered(route, background, c, data) });
      const progress = c.streaming();
      return meterRawBody(response, c, { kind: "events", progress, observe: route.observer(progress, p), hold: holdOf(route, background, c, p, progress) });
    });
    return unwrapped;
  };
  return client;
}

/** A complete answer: metered with its usage, unless it is a background response still to run (settled when this client reads it final, background.ts). */
function answered(route: Route, background: BackgroundCalls | undefined, call: MeteredCall, data: any): void {
  if (!background?.holdPending(data, call)) call.commit(route.usage(data));
}

/** For a stream left before its end: holds the call while its background response runs on (else undefined: settled). */
function holdOf(route: Route, background: BackgroundCalls | undefined, call: MeteredCall, prepared: Prepared, progress: StreamProgress): (() => boolean) | undefined {
  return background && route.cutRunning ? () => background.holdCut(route.cutRunning!(progress, prepared), call) : undefined;
}

/**
 * Replaces `.asResponse()` on `promise` and on every promise derived from it (the SDKs' resources
 * add transforms of their own with `_thenUnwrap`): the response it resolves with goes through
 * `raw`, unless a parse of the body has begun on that promise (`.withResponse()` parses and
 * answers the response too; the SDK reads that body itself). `parsedPromise` is the field the
 * SDKs' own asResponse reads to tell the same.
 */
function meterAsResponse(promise: any, raw: (response: Response) => Response): void {
  const asResponse = promise?.asResponse;
  const thenUnwrap = promise?._thenUnwrap;
  if (typeof asResponse !== "function" || typeof thenUnwrap !== "function") return;
  promise.asResponse = function meteredAsResponse(this: any) {
    return asResponse.call(this).then((response: unknown) => (this.parsedPromise || !(response instanceof Response) ? response : raw(response)));
  };
  promise._thenUnwrap = function meteredThenUnwrap(this: any, transform: unknown) {
    const derived = thenUnwrap.call(this, transform);
    meterAsResponse(derived, raw);
    return derived;
  };
}

/** The caller's abort, as both SDKs raise it: Anthropic's error names itself, openai's keeps Error's name. */
function isUserAbort(err: unknown): boolean {
  return (err as Error)?.name === "APIUserAbortError" || (err as object)?.constructor?.name === "APIUserAbortError";
}
