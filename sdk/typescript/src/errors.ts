import type { GuardResult, LimitCredits } from "./types.ts";

/** Carried by every error the library throws, whichever built-in class it also extends. */
const THROWN_BY_METER = Symbol.for("meterline.error");

/**
 * The base of every error the library throws: `err instanceof MeterError` tells them from the
 * host's. A wrong argument is also a `TypeError` (a bug at the call site, as in Node), so that
 * one is recognised by a mark rather than by its prototype.
 */
export class MeterError extends Error {
  constructor(message?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "MeterError";
  }

  static [Symbol.hasInstance](value: unknown): boolean {
    // Subclasses keep the ordinary prototype test: a MeterApiError is no LimitExceededError.
    if (this !== MeterError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[THROWN_BY_METER] === true;
  }
}
Object.defineProperty(MeterError.prototype, THROWN_BY_METER, { value: true });

/** A wrong argument: a TypeError (as before) that is also a MeterError. */
export class MeterTypeError extends TypeError {
  constructor(message: string) {
    super(message);
    this.name = "TypeError";
  }
}
Object.defineProperty(MeterTypeError.prototype, THROWN_BY_METER, { value: true });

/**
 * Thrown on a hard gate when blocking. `statusCode` 429 makes Fastify and Express answer 429
 * when a handler lets it through.
 */
export class LimitExceededError extends MeterError {
  readonly statusCode: number = 429;
  readonly status: number = 429;
  readonly result: GuardResult;
  /**
   * The blocking dimension (`result.gate_reason`): `total_spend`, `session_spend`,
   * `model_limit:<model>` or `limit:<name>`; for a team's member also the team plan's
   * `team:total_spend`, `team:model_limit:<model>` or `team:limit:<name>` (a team window, or the
   * member's share under a `scope: "member"` limit). When several block at once, the one that lets a
   * call through again last.
   */
  readonly reason: string | null;
  /**
   * When the blocking dimension lets a call through again by itself (`result.resets_at`): the end of
   * its window (a calendar window in the plan's time zone, the billing period, the library's own
   * session) or when enough of a rolling window's usage ages out; null when it never does (a max
   * of 0, prepaid credits with no allowance that ran out: only a grant lifts them) or is not known
   * (a caller's session lasts as long as it is used). The HTTP helpers send it as Retry-After.
   */
  readonly resetsAt: Date | null;
  /**
   * Set when the prepaid credits are what ran out: the period cap (`total_spend`) blocked with
   * credits enabled and spend past the plan's allowance. The balance (0, or below 0 for an
   * overdraft) and the plan's credits_low_at, in dollars; null for any other block. It lifts
   * when a grant tops the balance up, not at `resetsAt`.
   */
  readonly credits: LimitCredits | null;
  constructor(result: GuardResult, resetsAt: Date | null = result.resets_at == null ? null : new Date(result.resets_at), credits: LimitCredits | null = null) {
    super(result.message ?? "usage limit reached");
    this.name = "LimitExceededError";
    this.result = result;
    this.reason = result.gate_reason;
    this.resetsAt = resetsAt;
    this.credits = credits;
  }
}

/**
 * `failClosed` blocked a call because the user's session view could not be loaded (the
 * metering service is unreachable, or refused the API key): an outage, not a limit. A
 * LimitExceededError, so code that catches blocked calls still catches it, but with
 * `statusCode` 503 and `resetsAt` the library's next attempt to load the view: the HTTP helpers
 * answer it 503 with Retry-After.
 */
export class MeterUnavailableError extends LimitExceededError {
  override readonly statusCode = 503;
  override readonly status = 503;
  constructor(result: GuardResult, retryAt: Date) {
    super(result, retryAt);
    this.name = "MeterUnavailableError";
  }
}

/** An answer of the service other than 2xx; `detail` is its message. */
export class MeterApiError extends MeterError {
  readonly status: number;
  readonly detail: string;
  /** From a Retry-After header, when sent. */
  readonly retryAfterMs: number | undefined;
  constructor(status: number, detail: string, retryAfterMs?: number) {
    super(`meter service answered ${status}: ${detail}`);
    this.name = "MeterApiError";
    this.status = status;
    this.detail = detail;
    this.retryAfterMs = retryAfterMs;
  }
  /**
   * 408 (a proxy that gave up waiting: the request may not have reached the service), 429 and
   * 5xx can succeed later; any other 4xx never will.
   */
  get retryable(): boolean {
    return this.status === 408 || this.status === 429 || this.status >= 500;
  }
}

/**
 * The service refused the API key (401) or its scope (403). Until the key is fixed nothing is
 * delivered: `flush()` rejects with it rather than resolving false.
 */
export class MeterAuthenticationError extends MeterApiError {
  constructor(status: number, detail: string) {
    super(status, detail);
    this.name = "MeterAuthenticationError";
  }
}

/**
 * Events the library gave up on, sent to `onError` (and logged) so that lost usage is never
 * silent: `reason` "queue_full" when the queue was full and a new event was dropped (once per
 * spell of a full queue, at its first drop; `stats.dropped` counts them all), "undelivered" when
 * `shutdown()` ended with events it could not deliver (`count` of them). A batch the service
 * refuses reaches `onError` as the `MeterApiError` of the refusal instead.
 */
export class MeterEventsDroppedError extends MeterError {
  constructor(
    readonly reason: "queue_full" | "undelivered",
    readonly count: number,
    message: string,
  ) {
    super(message);
    this.name = "MeterEventsDroppedError";
  }
}

/** The service did not answer (refused, reset, timed out). Always retryable. */
export class MeterNetworkError extends MeterError {
  readonly retryable = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "MeterNetworkError";
  }
}
