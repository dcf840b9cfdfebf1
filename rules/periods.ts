/**
 * Billing periods: calendar months (UTC), roll-on of a dated window by its own length, and
 * attribution (which period, and which subscription, an event at time `t` belongs to).
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

/**
 * The window of the same length as [start, end) that holds `t` (at or after `start`), counting
 * on from `start`, as billing subscriptions renew. Times in epoch milliseconds.
 */
export function rollOn(start: number, end: number, t: number): { start: number; end: number } {
  const length = Math.max(end - start, 1);
  const k = Math.floor((t - start) / length);
  return { start: start + k * length, end: start + (k + 1) * length };
}

/** The window of a dated subscription that holds `t`: its own dates, or rolled on by their length. */
function windowAt(s: SubscriptionWindow, t: Date): { start: Date; end: Date } | null {
  if (!s.periodStart || !s.periodEnd || t < s.periodStart) return null;
  const w = rollOn(s.periodStart.getTime(), s.periodEnd.getTime(), t.getTime());
  return { start: new Date(w.start), end: new Date(w.end) };
}

function contains(s: SubscriptionWindow, t: Date): boolean {
  return !!s.periodStart && !!s.periodEnd && s.periodStart <= t && t < s.periodEnd;
}

/**
 * `history` is in the order the subscriptions were set (the plans service's history order,
 * oldest first); "latest" below means later in it, never a comparison of clocks.
 * 1. The latest subscription whose dates contain `t` decides the period: its window, its
 *    plan (also for an event stamped inside new dates that arrives before the change is
 *    recorded; a plan change with the same dates puts the whole window under the new plan).
 *    A subscription without dates set later, at or before `t`, keeps that window but
 *    brings its plan (an unlimited plan chosen mid-window).
 * 2. Otherwise the latest subscription that covers `t` at all: a dated one from its
 *    period_start on, rolled on to the next window of the same length while no later
 *    subscription replaces it (as billing subscriptions renew); one without dates from
 *    when it was set, in calendar months (UTC).
 * 3. Otherwise the calendar month of `t`, under the latest plan set at or before `t` (else
 *    the first one).
 */
export function periodAt(history: readonly SubscriptionWindow[], t: Date): BillingPeriod {
  const undatedAfter = (i: number) => {
    for (let j = history.length - 1; j > i; j--) {
      const s = history[j]!;
      if (!s.periodStart && s.effectiveAt <= t) return s;
    }
    return null;
  };
  for (let i = history.length - 1; i >= 0; i--) {
    const s = history[i]!;
    if (contains(s, t)) return { start: s.periodStart!, end: s.periodEnd!, subscription: undatedAfter(i) ?? s, calendar: false };
  }
  for (let i = history.length - 1; i >= 0; i--) {
    const s = history[i]!;
    const rolled = windowAt(s, t);
    if (rolled) {
      // A later subscription's dates starting inside the rolled window end it there.
      for (const later of history.slice(i + 1)) {
        if (later.periodStart && later.periodStart > rolled.start && later.periodStart < rolled.end) rolled.end = later.periodStart;
      }
      return { ...rolled, subscription: s, calendar: false };
    }
    if (!s.periodStart && s.effectiveAt <= t) return { ...calendarMonth(t), subscription: s, calendar: true };
  }
  let inForce: SubscriptionWindow | null = null;
  for (const s of history) if (s.effectiveAt <= t) inForce = s;
  return { ...calendarMonth(t), subscription: inForce ?? history[0] ?? null, calendar: true };
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
