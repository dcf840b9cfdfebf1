// What the four integrations share: who the call is for, the reservation taken before the
// request, and settling it exactly once with the provider's numbers or, failing those, an
// estimate.
import { commitNow, reporterOf, reserveNow } from "../internal.ts";
import type { Meter } from "../meter.ts";
import type { Reservation } from "../reservation.ts";
import { estimateTokens } from "../pricing.ts";
import { MeterError, MeterTypeError } from "../errors.ts";
import { checkMetadata, checkNames } from "../validate.ts";

/** Options of every integration. */
export interface IntegrationOptions {
  /** The product's external user id; when absent, the user of `meter.withUser()` is used. */
  user_id?: string;
  /** Every call's session; when absent, the session of `meter.withUser(userId, fn, { session_id })`, else the library's own. */
  session_id?: string;
  /** Added to every event's metadata, beside `provider`. */
  metadata?: Record<string, unknown>;
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  tool_calls: string[];
}

/** What a stream has shown so far; `complete` once the provider's final usage arrived. */
export interface StreamProgress {
  complete: boolean;
  input_tokens?: number;
  output_tokens?: number;
  tool_calls: string[];
  /** Characters of generated text and tool arguments seen, for estimating a cut stream. */
  chars: number;
  /** The id of the response the stream is for, where it names one (OpenAI's Responses API), until its final event. */
  responseId?: string;
}

export class MissingUserError extends MeterError {
  constructor(integration: string) {
    super(`${integration}: no user to meter this call for; pass { user_id } to the wrapper or run the call inside meter.withUser(userId, ...)`);
    this.name = "MissingUserError";
  }
}

/**
 * What the model reads of a request (system, messages, tools), as one value: the parts
 * present, or the only one. The core estimates input tokens from it (about four characters a
 * token) when the plan asks for a pre-call estimate, and so does a stream cut before the
 * provider said.
 */
export function promptOf(...parts: unknown[]): unknown {
  const present = parts.filter((p) => p !== undefined && p !== null);
  if (present.length === 0) return undefined;
  return present.length === 1 ? present[0] : present;
}

/**
 * The request's own output limit: the first of `limits` (its max_tokens and alike, by
 * precedence) that is a token count. The estimate takes it in place of pre_call_buffer_tokens.
 */
export function outputLimit(...limits: unknown[]): number | undefined {
  for (const limit of limits) if (Number.isSafeInteger(limit) && (limit as number) >= 0) return limit as number;
  return undefined;
}

/** Input tokens of a request from the parts the model reads, by the core's rule. */
export function estimateInput(...parts: unknown[]): number {
  return estimateTokens(promptOf(...parts));
}

/** A wrong argument fails where the wrapper is made, not at the first model call. */
export function checkArguments(integration: string, meter: Meter, options: IntegrationOptions): void {
  if (typeof (meter as Partial<Meter> | undefined)?.reserve !== "function") throw new MeterTypeError(`${integration}: the second argument must be a Meter`);
  if (options === null || typeof options !== "object") throw new MeterTypeError(`${integration}: options must be an object`);
  if (options.user_id !== undefined && (typeof options.user_id !== "string" || options.user_id.length === 0 || options.user_id.length > 255)) {
    throw new MeterTypeError(`${integration}: user_id must be a string of 1 to 255 characters (the product's external_user_id)`);
  }
  checkMetadata(options.metadata, `${integration}: metadata`);
  checkNames({ session_id: options.session_id }, `${integration}: `);
}

/** The user of a call, read synchronously where the caller's async context is still current. */
export function resolveUser(meter: Meter, options: IntegrationOptions, integration: string): string {
  const user = options.user_id ?? meter.currentUser();
  if (!user) throw new MissingUserError(integration);
  return user;
}

/** The core's estimate counts about four characters a token; generated text is counted alike. */
const CHARS_PER_TOKEN = 4;

/** Usage of a cut stream: what the provider reported so far, otherwise the estimate. */
export function usageOfProgress(progress: StreamProgress, inputEstimate: number): Usage {
  if (progress.complete) {
    return { input_tokens: progress.input_tokens ?? 0, output_tokens: progress.output_tokens ?? 0, tool_calls: progress.tool_calls };
  }
  return {
    input_tokens: progress.input_tokens ?? inputEstimate,
    output_tokens: Math.max(progress.output_tokens ?? 0, Math.ceil(progress.chars / CHARS_PER_TOKEN)),
    tool_calls: progress.tool_calls,
  };
}

export interface CallStart {
  user_id: string;
  provider: string;
  model: string | undefined;
  /** What the model reads (see promptOf); estimated only when a plan or a cut stream needs it. */
  prompt: unknown;
  /** The request's output limit (see outputLimit), if it has one. */
  max_output_tokens?: number | undefined;
}

const open = new WeakMap<Meter, Set<MeteredCall>>();

/**
 * The calls of `meter` not settled yet. When the meter shuts down, each is settled with what it
 * showed or its estimate (a request in flight, a stream whose reader left without a trace):
 * recorded rather than lost with the process, and its reservation given back.
 */
function openCalls(meter: Meter): Set<MeteredCall> {
  let calls = open.get(meter);
  if (!calls) {
    const set = new Set<MeteredCall>();
    open.set(meter, set);
    meter.onShutdown(() => {
      for (const call of [...set]) call.settle();
    });
    calls = set;
  }
  return calls;
}

/**
 * One metered model call: reserved before the request (this is where a hard gate throws),
 * then either committed once with its usage or released when the provider failed.
 */
export class MeteredCall {
  #done = false;
  #prompt: unknown;
  #estimate: number | undefined;
  readonly metadata: Record<string, unknown>;
  /** What the call's stream has shown, once it streams (see streaming()). */
  progress: StreamProgress | undefined;
  private constructor(
    private readonly meter: Meter,
    private readonly reservation: Reservation,
    prompt: unknown,
    metadata: Record<string, unknown>,
    private readonly open: Set<MeteredCall>,
  ) {
    this.#prompt = prompt;
    this.metadata = metadata;
    open.add(this);
  }

  /**
   * Reserves the call: at once when the user's view is warm and no lease has to be asked for
   * (no promise, no tick), else once reserve() resolves. Throws (or rejects) at a hard gate.
   */
  static start(meter: Meter, options: IntegrationOptions, start: CallStart): MeteredCall | Promise<MeteredCall> {
    const metadata = { ...options.metadata, provider: start.provider };
    // The prompt rather than a count: a plan without pre-call estimates never serializes it.
    const input = { model: start.model ?? "unknown", session_id: options.session_id, prompt: start.prompt, max_output_tokens: start.max_output_tokens, metadata };
    const now = reserveNow(meter, start.user_id, input);
    if (now) return new MeteredCall(meter, now, start.prompt, metadata, openCalls(meter));
    return meter.reserve(start.user_id, input).then((reservation) => new MeteredCall(meter, reservation, start.prompt, metadata, openCalls(meter)));
  }

  /** Input tokens estimated from the request, computed once and only when asked. */
  get estimate(): number {
    this.#estimate ??= estimateTokens(this.#prompt);
    return this.#estimate;
  }

  get settled(): boolean {
    return this.#done;
  }

  /** Records the call; later calls are ignored, so a response parsed twice counts once. */
  commit(usage: Usage): void {
    if (this.#done) return;
    this.#done = true;
    this.#prompt = undefined;
    this.open.delete(this);
    // The caller has its answer already: a metering failure is reported, not thrown into
    // the model call.
    try {
      commitNow(this.reservation, { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens, tool_calls: usage.tool_calls, metadata: this.metadata });
    } catch (err) {
      // Refused (what the provider reported fails a check): the hold is given back, not kept for good.
      this.reservation.release();
      reporterOf(this.meter).warn("a metered call could not be recorded", err as Error);
    }
  }

  /** The call's answer is a stream: what it shows is gathered here, for settling. */
  streaming(): StreamProgress {
    this.progress = newProgress();
    return this.progress;
  }

  /** Settles with what a stream showed: its final usage, else what it used and the input estimate. */
  settle(progress: StreamProgress = this.progress ?? newProgress()): void {
    if (this.#done) return;
    const estimate = progress.complete || progress.input_tokens !== undefined ? 0 : this.estimate;
    this.commit(usageOfProgress(progress, estimate));
  }

  /**
   * The call failed before an answer. A provider error used nothing: the reservation goes
   * back. A caller's abort may have left the provider working on the request: it is metered
   * with the input estimate.
   */
  fail(aborted: boolean): void {
    if (aborted) this.commit({ input_tokens: this.estimate, output_tokens: 0, tool_calls: [] });
    else this.release();
  }

  release(): void {
    if (this.#done) return;
    this.#done = true;
    this.#prompt = undefined;
    this.open.delete(this);
    this.reservation.release();
  }
}

/**
 * Reads one stream item: returns the item the caller gets (itself, or a copy without what the
 * wrapper added), or undefined to hide it.
 */
export type Observer<T> = (item: T) => T | undefined;

/**
 * Passes a stream's items through `observe`, and settles the call when the stream ends, fails,
 * or is left by the consumer (break, return, abort): with the final usage, or the estimate of
 * what it used. A plain iterator object rather than an async generator, and closures made once
 * per stream: each item costs one promise reaction and a synchronous observe().
 */
export function meterIterator<T>(source: AsyncIterator<T>, call: MeteredCall, progress: StreamProgress, observe: Observer<T>, hold?: () => boolean): AsyncIterableIterator<T> {
  // `hold`: a stream whose request goes on without it (a background response) is held, not settled, when cut.
  const settle = () => void (hold?.() || call.settle(progress));
  const step = (r: IteratorResult<T>): IteratorResult<T> | Promise<IteratorResult<T>> => {
    if (r.done) {
      settle();
      return r;
    }
    const item = observe(r.value);
    if (item === undefined) return iterator.next();
    return item === r.value ? r : { done: false, value: item };
  };
  const failed = (err: unknown): never => {
    settle();
    throw err;
  };
  const iterator: AsyncIterableIterator<T> = {
    next: () => source.next().then(step, failed),
    async return(value?: unknown) {
      settle();
      return (await source.return?.(value)) ?? { done: true, value: undefined };
    },
    async throw(err?: unknown) {
      settle();
      if (source.throw) return source.throw(err);
      throw err;
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}

// A stream dropped without being read to its end (or at all) never reaches meterIterator's
// finally: when it is collected, the call is settled with what it showed, else its estimate.
const unread = new FinalizationRegistry<MeteredCall>((call) => call.settle());

/** Settles `call` when `stream` is garbage-collected unsettled; `stream` must not be reachable from `call`. */
export function settleWhenCollected(stream: object, call: MeteredCall): void {
  unread.register(stream, call);
}

export function newProgress(): StreamProgress {
  return { complete: false, tool_calls: [], chars: 0 };
}
