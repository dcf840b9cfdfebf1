import { toDollars, toNano } from "./money.ts";

/**
 * Prepaid credits against the period cap (BUDGETS.md §3), as every gate counts them. With
 * credits enabled and an allowance (`max_spend_per_period`), the period spend cap is the
 * allowance plus what the period drew plus the balance: the `total_spend` dimension's `max`. It
 * does not move when spend past the allowance turns balance into drawn, so a gate compares
 * spend with it as with any cap; only a grant, a void or an expiry moves it. Money in dollars,
 * computed in whole nano-dollars (money.ts).
 */

/** A user's credits as the session view sends them (`credits`, dollars); null when the plan has credits disabled. */
export interface CreditsView {
  balance: number;
  /** Granted, not effective yet. */
  pending: number;
  /** The plan's `credits_low_at`; null: never low. */
  low_at: number | null;
  /** The active grants that expire, each with what it had left when the view was read. */
  expiries: readonly CreditExpiry[];
}

export interface CreditExpiry {
  grant_id: string;
  /** ISO 8601. */
  at: string;
  remaining: number;
}

/** What a block names of the credits when they are what ran out: the balance and the plan's low mark (dollars). */
export interface BlockCredits {
  balance: number;
  low_at: number | null;
}

/**
 * The period spend cap with credits: allowance + drawn + balance. A null allowance is
 * unlimited and draws nothing: null.
 */
export function creditCap(allowance: number | null, drawn: number, balance: number): number | null {
  if (allowance === null) return null;
  return toDollars(toNano(allowance) + toNano(drawn) + toNano(balance));
}

/**
 * What the period drew, read back from a cap and a balance that were reported together
 * (cap - allowance - balance), never below 0. It includes what the period spent past the
 * allowance before the user moved to a plan with credits, which is never drawn but raises the
 * cap as much (docs/api.md, "Selling credits").
 */
export function creditsDrawn(cap: number, allowance: number, balance: number): number {
  return toDollars(Math.max(0, toNano(cap) - toNano(allowance) - toNano(balance)));
}

/**
 * The balance after `spend` in the period under `cap`: spend within the allowance draws
 * nothing, each dollar past it one dollar of credits. Below 0: an overdraft.
 */
export function creditBalance(cap: number, allowance: number, spend: number): number {
  return toDollars(toNano(cap) - Math.max(toNano(allowance), toNano(spend)));
}

/**
 * A block names the credits when the period cap blocks (`total_spend`) with credits enabled
 * and the spend (with the call's estimate: the result's `current_value`) has reached the
 * allowance: the allowance alone would have blocked, so the credits are what ran out.
 */
export function blockedByCredits(gateReason: string | null, status: string, currentValue: number, allowance: number | null): boolean {
  return status === "hard_gate" && gateReason === "total_spend" && allowance !== null && toNano(currentValue) >= toNano(allowance);
}

/** What a change of balance sets off: `credits.low` and `credits.depleted`, and the low mark's arming after it. */
export interface CreditCrossing {
  low: boolean;
  depleted: boolean;
  /** Whether the next fall below the low mark fires again. */
  armed: boolean;
}

/**
 * A balance going from `before` to `after`: low when it falls from at or above `lowAt` to
 * below it while armed (then disarmed: once per crossing); armed again once it is at or above
 * `lowAt` (a grant lifted it). Depleted when it goes from above 0 to 0 or below.
 */
export function creditCrossing(before: number, after: number, lowAt: number | null, armed: boolean): CreditCrossing {
  const b = toNano(before);
  const a = toNano(after);
  const depleted = b > 0 && a <= 0;
  if (lowAt === null) return { low: false, depleted, armed };
  const mark = toNano(lowAt);
  const low = armed && b >= mark && a < mark;
  return { low, depleted, armed: a >= mark ? true : low ? false : armed };
}
