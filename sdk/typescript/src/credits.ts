/**
 * A user's prepaid credits as the library keeps them (BUDGETS.md §3; the rules in
 * rules/credits.ts). The session view gives the period cap with the balance (the `total_spend`
 * dimension's max: allowance + drawn + balance), which only a grant, a void or an expiry moves;
 * locally the balance is what that cap leaves after the period's spend, so spend past the
 * allowance lowers it call by call, and a newer view of the same cap can only lower it further
 * (its spend merges as the larger). A view with another cap (a grant, a void, an expiry, a new
 * period) replaces it. Crossings of the low mark and of 0, and the expiries the view listed,
 * become the callbacks' events, once per process.
 */
import { blockedByCredits, creditBalance, creditCap, creditCrossing, toDollars, toNano, type BlockCredits, type CreditsView } from "./rules/index.ts";
import type { CreditsEvent, LimitStatus, PlanConfig } from "./types.ts";

export interface CreditsNews {
  kind: "low" | "depleted" | "expired";
  event: CreditsEvent;
}

/** The credits of a user whose plan has them enabled with an allowance; absent otherwise. */
export class UserCredits {
  /** The plan's max_spend_per_period (the allowance). */
  allowance: number;
  /** The period cap with the credits (dollars): what the user's gates and leases see. */
  cap: number;
  lowAt: number | null;
  pending: number;
  /** Grants that expire, soonest first (at: epoch ms). */
  expiries: { grantId: string; at: number; remaining: number }[];
  /** The balance the callbacks last saw, and whether the low mark fires on the next fall below it. */
  seen: number;
  armed = true;

  constructor(allowance: number, cap: number, view: CreditsView, spend: number, now: number) {
    this.allowance = allowance;
    this.cap = cap;
    this.lowAt = view.low_at ?? null;
    this.pending = view.pending;
    this.expiries = expiriesOf(view, now);
    this.seen = this.balance(spend);
  }

  /** The balance after `spend` in the period: below 0 an overdraft. */
  balance(spend: number): number {
    return creditBalance(this.cap, this.allowance, spend);
  }

  /** What a block by the period cap names, or null when the allowance did not run out (blockedByCredits). */
  block(gateReason: string | null, status: string, currentValue: number, spend: number): BlockCredits | null {
    return blockedByCredits(gateReason, status, currentValue, this.allowance) ? { balance: this.balance(spend), low_at: this.lowAt } : null;
  }

  /** The period ended with no view of the next: its cap is the allowance plus the balance carried over (nothing drawn yet). */
  rolled(spend: number): void {
    this.cap = creditCap(this.allowance, 0, this.balance(spend))!;
  }

  /**
   * What happened since the callbacks last looked: grants that expired by `now` (what they
   * had left, as far as the balance still held it, leaves the cap), then the low mark and 0
   * crossed by the balance. `expired` is true when a grant expired (the view is then read again).
   */
  news(userId: string, spend: number, now: number): { news: CreditsNews[]; expired: boolean } {
    const news: CreditsNews[] = [];
    let expired = false;
    while (this.expiries.length > 0 && this.expiries[0]!.at <= now) {
      const x = this.expiries.shift()!;
      const left = toNano(Math.max(0, this.balance(spend)));
      const lost = toDollars(Math.min(toNano(x.remaining), left));
      this.cap = toDollars(toNano(this.cap) - toNano(lost));
      expired = true;
      if (lost > 0) news.push({ kind: "expired", event: { userId, balance: this.balance(spend), lowAt: this.lowAt, grantId: x.grantId, amount: lost } });
    }
    const after = this.balance(spend);
    const c = creditCrossing(this.seen, after, this.lowAt, this.armed);
    this.seen = after;
    this.armed = c.armed;
    if (c.low) news.push({ kind: "low", event: { userId, balance: after, lowAt: this.lowAt } });
    if (c.depleted) news.push({ kind: "depleted", event: { userId, balance: after, lowAt: this.lowAt } });
    return { news, expired };
  }

  /** When the next grant expires (epoch ms), Infinity when none does. */
  get nextExpiry(): number {
    return this.expiries[0]?.at ?? Infinity;
  }
}

/**
 * The credits a session view read at `now` gives (null when the plan has them disabled, has
 * no allowance, or the service sends none). The balance the callbacks saw and the low mark's
 * arming carry over from `before`, so a refresh fires nothing twice and a grant that lifts the
 * balance arms the mark again.
 */
export function readCredits(plan: PlanConfig | null, view: { credits?: CreditsView | null; limits?: LimitStatus[] }, spend: number, before: UserCredits | null, now: number): UserCredits | null {
  const c = view.credits;
  if (plan === null || !plan.credits_enabled || plan.max_spend_per_period === null || c == null) return null;
  const allowance = plan.max_spend_per_period;
  const total = view.limits?.find((d) => d.reason === "total_spend");
  // A view without the dimension list: what the period drew is taken to be what its spend past the allowance needed.
  const cap = total !== undefined ? total.max : creditCap(allowance, Math.max(0, toDollars(toNano(spend) - toNano(allowance))), c.balance)!;
  const credits = new UserCredits(allowance, cap, c, spend, now);
  if (before !== null) {
    credits.seen = before.seen;
    credits.armed = before.armed;
  }
  return credits;
}

/** The view's expiries still to come: a grant past its expiry when the view was read is already out of its balance. */
function expiriesOf(view: CreditsView, now: number): { grantId: string; at: number; remaining: number }[] {
  return (view.expiries ?? [])
    .map((x) => ({ grantId: x.grant_id, at: Date.parse(x.at), remaining: x.remaining }))
    .filter((x) => x.at > now && x.remaining > 0)
    .sort((a, b) => a.at - b.at);
}
