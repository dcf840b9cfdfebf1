import type { GuardResult } from "./types.ts";

/** Carried by every error the library throws, whichever built-in class it also extends. */
const THROWN_BY_METER = Symbol.for("@meter/sdk.error");

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
  readonly statusCode = 429;
  readonly status = 429;
  readonly result: GuardResult;
  /**
   * When the limit lifts by itself, where known: the billing period's end (total_spend,
   * model limits) or the library's own session's end (session_spend); null otherwise (a
   * caller-given session lasts as long as it is used). The HTTP helpers send it as Retry-After.
   */
  readonly resetsAt: Date | null;
  constructor(result: GuardResult, resetsAt: Date | null = null) {
    super(result.message ?? "usage limit reached");
    this.name = "LimitExceededError";
    this.result = result;
    this.resetsAt = resetsAt;
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
  /** 429 and 5xx can succeed later; any other 4xx never will. */
  get retryable(): boolean {
    return this.status === 429 || this.status >= 500;
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
