/**
 * Billing-period attribution: which period (and which subscription) an event at time `t`
 * belongs to. Pure functions; the rule is documented in the service README.
 */

/** One entry of a user's subscription history, as the plans service reports it. */
export interface SubscriptionWindow {
  planId: string;
  planName: string;
  /** [periodStart, periodEnd); both unset for an unlimited plan subscribed without dates. */
  periodStart?: Date;
  periodEnd?: Date;
  /** When the subscription was set. */
  effectiveAt: Date;
}

export interface BillingPeriod {
  start: Date;
  end: Date;
  /** The subscription whose plan applies to the period; null for a user without a plan. */
  subscription: SubscriptionWindow | null;
  /** True when the window is the calendar month (no subscription window covers the time). */
  calendar: boolean;
}

export function calendarMonth(t: Date): { start: Date; end: Date } {
  const y = t.getUTCFullYear();
  const m = t.getUTCMonth();
  return { start: new Date(Date.UTC(y, m, 1)), end: new Date(Date.UTC(y, m + 1, 1)) };
}

function contains(s: SubscriptionWindow, t: Date): boolean {
  return !!s.periodStart && !!s.periodEnd && s.periodStart <= t && t < s.periodEnd;
}

/**
 * 1. The subscription in force at `t` is the latest one set at or before `t`. If it has a
 *    window containing `t`, that window is the period.
 * 2. Otherwise the window of the latest-set subscription that contains `t` (covers events
 *    stamped a little before their subscription was recorded, and a plan without dates set
 *    while a dated window still runs), under the plan in force (else that subscription's).
 * 3. Otherwise the calendar month (UTC) of `t`, under the plan in force (if any).
 */
export function periodAt(history: readonly SubscriptionWindow[], t: Date): BillingPeriod {
  const subs = [...history].sort((a, b) => a.effectiveAt.getTime() - b.effectiveAt.getTime());
  let inForce: SubscriptionWindow | null = null;
  for (const s of subs) if (s.effectiveAt <= t) inForce = s;
  if (inForce && contains(inForce, t)) {
    return { start: inForce.periodStart!, end: inForce.periodEnd!, subscription: inForce, calendar: false };
  }
  for (let i = subs.length - 1; i >= 0; i--) {
    const s = subs[i]!;
    if (contains(s, t)) return { start: s.periodStart!, end: s.periodEnd!, subscription: inForce ?? s, calendar: false };
  }
  return { ...calendarMonth(t), subscription: inForce ?? subs[0] ?? null, calendar: true };
}

export type UsagePeriod = { kind: "current_period" } | { kind: "month"; start: Date; end: Date };

/** Parses the `period` of a usage query: current_period, current_month or YYYY-MM. */
export function parseUsagePeriod(label: string, now: Date): UsagePeriod | null {
  if (label === "" || label === "current_period") return { kind: "current_period" };
  if (label === "current_month") return { kind: "month", ...calendarMonth(now) };
  const m = /^(\d{4})-(\d{2})$/.exec(label);
  if (!m) return null;
  const month = Number(m[2]);
  if (month < 1 || month > 12) return null;
  return { kind: "month", ...calendarMonth(new Date(Date.UTC(Number(m[1]), month - 1, 1))) };
}
