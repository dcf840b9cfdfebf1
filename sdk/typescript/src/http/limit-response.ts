// The answer both HTTP helpers give to a call blocked by a hard gate: JSON 429 with the
// gate's figures, and Retry-After when the blocking dimension lifts by itself at a known time (its `resets_at`); to a call
// failClosed blocked because metering is unavailable (MeterUnavailableError): 503, Retry-After.
import { now as clockNow } from "../clock.ts";
import { LimitExceededError } from "../errors.ts";

export interface LimitBody {
  detail: string;
  /** The blocking dimension: `total_spend`, `session_spend`, `model_limit:<model>` or `limit:<name>`; a team's: `team:total_spend`, `team:model_limit:<model>`, `team:limit:<name>`. */
  gate_reason: string | null;
  usage_pct: number;
  current_value: number;
  limit_value: number;
  /** When the blocking dimension lets a call through again (ISO 8601; Retry-After counts down to it); null: not by itself. */
  resets_at: string | null;
  /** Only when the prepaid credits ran out (LimitExceededError.credits): the balance and the plan's credits_low_at, in dollars. */
  credits?: { balance: number; low_at: number | null };
}

/**
 * The LimitExceededError behind `err`: the error itself, or one a model client wrapped in its
 * own error class as `cause` (the Anthropic stream helper does). Matched by name too, so that
 * two copies of the package in one process still recognize each other's errors.
 */
export function limitOf(err: unknown): LimitExceededError | undefined {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof LimitExceededError || (e as Error).name === "LimitExceededError" || (e as Error).name === "MeterUnavailableError") {
      if ((e as LimitExceededError).result) return e as LimitExceededError;
    }
  }
  return undefined;
}

export function limitBody(err: LimitExceededError): LimitBody {
  const r = err.result;
  const at = err.resetsAt instanceof Date && Number.isFinite(err.resetsAt.getTime()) ? err.resetsAt.toISOString() : null;
  const body: LimitBody = { detail: err.message, gate_reason: r.gate_reason, usage_pct: r.usage_pct, current_value: r.current_value, limit_value: r.limit_value, resets_at: at };
  const credits = err.credits;
  if (credits != null) body.credits = { balance: credits.balance, low_at: credits.lowAt };
  return body;
}

/** The HTTP status of the answer: 429 for a limit, 503 when metering is unavailable (failClosed). */
export function limitStatus(err: LimitExceededError): number {
  return err.statusCode === 503 ? 503 : 429;
}

/** Whole seconds until the limit lifts (at least 1), or undefined when unknown. */
export function retryAfterSeconds(err: LimitExceededError, now = clockNow()): number | undefined {
  const at = err.resetsAt instanceof Date ? err.resetsAt.getTime() : NaN;
  if (!Number.isFinite(at)) return undefined;
  return Math.max(1, Math.ceil((at - now) / 1000));
}
