import { toNano } from "./money.ts";
import { rollOn } from "./periods.ts";
import {
  bucketCounts,
  bucketExpiresAt,
  calendarWindow,
  rollingBucket,
  rollingResetsAt,
  type Bucket,
  type CalendarWindow,
  type Metric,
  type Span,
  type WindowKind,
} from "./windows.ts";

/**
 * What one entry of a plan's `limits` has counted for a user, as a client keeps it between
 * session views (BUDGETS.md §2): the current window of a calendar or `period` limit, the buckets
 * of a rolling one, and what calls in flight hold. Amounts are integers: nano-dollars for
 * spend, tokens, requests. Windows roll here, without the service: a calendar window at its end
 * (the next one from calendarWindow in the plan's time zone), a rolling window as its buckets
 * age out.
 */

/** One entry of a plan's `limits`, as the plan answers it (null: not given). */
export interface PlanLimit {
  name: string;
  metric: Metric;
  /** Dollars for spend. */
  max: number;
  window: WindowKind;
  duration_minutes?: number | null;
  model?: string | null;
  soft_gate_at?: number | null;
  hard_gate_at?: number | null;
}

/**
 * Whether a team plan's limit counts each member apart (`scope: member`), else the sum over the
 * team's members (`team`, the default; BUDGETS.md section 4). Read only in a team plan.
 */
export function memberScoped(limit: PlanLimit): boolean {
  return (limit as PlanLimit & { scope?: string | null }).scope === "member";
}

export interface LimitCounter {
  /** Calendar and period limits: the window counted, [start, end) in epoch ms. */
  start: number;
  end: number;
  /** Calendar and period limits: counted in the window. */
  used: number;
  /** Rolling limits: the buckets, oldest first. */
  buckets: Bucket[];
  /** What the calls in flight hold. */
  held: number;
  /** Rolling limits: `sum` and `resets` hold until this time (the next bucket to age out), or until a count. */
  validUntil: number;
  sum: number;
  resets: number | null;
}

/** An amount of a limit's metric in its integer unit: dollars to nano-dollars, counts as they are. */
export function unitOf(metric: Metric, amount: number): number {
  return metric === "spend" ? toNano(amount) : amount;
}

/** A counter with nothing counted, in the window that holds `now`. */
export function newCounter(limit: PlanLimit, now: number, timeZone: string, period: Span): LimitCounter {
  const c: LimitCounter = { start: 0, end: 0, used: 0, buckets: [], held: 0, validUntil: -Infinity, sum: 0, resets: null };
  if (limit.window !== "rolling") {
    const w = windowAt(limit, now, timeZone, period, null);
    c.start = w.start;
    c.end = w.end;
  }
  return c;
}

/** The window of a calendar or period limit that holds `t`; a billing period that ended rolls on by its own length. */
function windowAt(limit: PlanLimit, t: number, timeZone: string, period: Span, last: Span | null): Span {
  if (limit.window === "period") {
    if (period.start <= t && t < period.end) return period;
    const from = last ?? period;
    return rollOn(from.start, from.end, t);
  }
  return calendarWindow(limit.window as CalendarWindow, t, timeZone);
}

/** The hard mark of a limit in its unit (money rounded to the nano-dollar, as gates compare). */
export function hardMarkOf(limit: PlanLimit, planHard: number): number {
  const max = unitOf(limit.metric, limit.max);
  const hard = limit.hard_gate_at ?? planHard;
  return limit.metric === "spend" ? Math.round(hard * max) : hard * max;
}

/**
 * Brings the counter to `now`: a calendar or period window that ended gives way to the one
 * holding `now` with nothing counted (a window that has ended gates nothing); a rolling window
 * drops the buckets that aged out and sums the rest (cached until the next one ages out).
 */
export function advance(limit: PlanLimit, c: LimitCounter, now: number, timeZone: string, period: Span, hardMark: number): void {
  if (limit.window !== "rolling") {
    if (now < c.end) return;
    const w = windowAt(limit, now, timeZone, period, c);
    c.start = w.start;
    c.end = w.end;
    c.used = 0;
    return;
  }
  if (now < c.validUntil) return;
  const d = limit.duration_minutes ?? 0;
  let drop = 0;
  while (drop < c.buckets.length && !bucketCounts(c.buckets[drop]!, d, now)) drop++;
  if (drop > 0) c.buckets.splice(0, drop);
  let sum = 0;
  for (const b of c.buckets) sum += b.used;
  c.sum = sum;
  c.resets = rollingResetsAt(c.buckets, d, hardMark, now);
  c.validUntil = c.buckets.length > 0 ? bucketExpiresAt(c.buckets[0]!, d) : Infinity;
}

/**
 * A call at `at` adds `amount` (the limit's unit). A calendar window counts only a time it
 * holds (a late call of a window that ended counts nowhere); a rolling window counts it in its
 * bucket while that bucket still counts at `now`.
 */
export function countIn(limit: PlanLimit, c: LimitCounter, at: number, amount: number, now: number): void {
  if (amount === 0) return;
  if (limit.window !== "rolling") {
    if (c.start <= at && at < c.end) c.used += amount;
    return;
  }
  const d = limit.duration_minutes ?? 0;
  const start = rollingBucket(d, at).start;
  if (!bucketCounts({ start, used: 0 }, d, now)) return;
  addBucket(c.buckets, start, amount, false);
  c.validUntil = -Infinity;
}

/** Adds to (or, with `max`, raises to) the bucket starting at `start`, kept in order. */
function addBucket(buckets: Bucket[], start: number, amount: number, max: boolean): void {
  let i = buckets.length - 1;
  while (i >= 0 && buckets[i]!.start > start) i--;
  const b = buckets[i];
  if (b !== undefined && b.start === start) b.used = max ? Math.max(b.used, amount) : b.used + amount;
  else buckets.splice(i + 1, 0, { start, used: amount });
}

/** What the service reports for one limit (session view `limits` entry; amounts in dollars for spend). */
export interface ViewedLimit {
  used: number;
  window_start?: string | null;
  resets_at?: string | null;
  buckets?: readonly { start: string; used: number }[] | null;
}

/**
 * A session view's figure merged in: per window (same start) or per bucket (same start) the
 * larger of local and service values, since local holds calls not delivered yet and the
 * service those of other processes. A later window than the local one is taken whole (the
 * service saw it roll first); an earlier one is stale and left out.
 */
export function mergeView(limit: PlanLimit, c: LimitCounter, v: ViewedLimit, now: number, timeZone: string, period: Span): void {
  if (limit.window !== "rolling") {
    const start = v.window_start ? Date.parse(v.window_start) : NaN;
    if (!Number.isFinite(start)) return;
    const used = unitOf(limit.metric, v.used);
    if (start === c.start) c.used = Math.max(c.used, used);
    else if (start > c.start && start <= now) {
      const w = windowAt(limit, start, timeZone, period, null);
      if (w.end <= now) return;
      c.start = w.start;
      c.end = w.end;
      c.used = used;
    }
    return;
  }
  const d = limit.duration_minutes ?? 0;
  for (const b of v.buckets ?? []) {
    const start = Date.parse(b.start);
    if (!Number.isFinite(start) || !bucketCounts({ start, used: 0 }, d, now)) continue;
    addBucket(c.buckets, start, unitOf(limit.metric, b.used), true);
  }
  c.validUntil = -Infinity;
}

/** Counted in the limit's window at the time of the last advance() (the limit's unit), without what calls in flight hold. */
export function usedOf(limit: PlanLimit, c: LimitCounter): number {
  return limit.window === "rolling" ? c.sum : c.used;
}

/** When the limit lets calls through again by itself (epoch ms), as of the last advance(); null: never (max 0) or nothing counted in a rolling window. */
export function resetsOf(limit: PlanLimit, c: LimitCounter): number | null {
  if (limit.max <= 0) return null;
  return limit.window === "rolling" ? c.resets : c.end;
}
