/**
 * What a usage event adds to the windows of its plan's `limits` (BUDGETS.md §2): for each limit
 * whose model is null or the event's, the window its timestamp falls in (calendar windows in the
 * plan's time zone, `period` the attributed billing period, rolling windows by bucket) and the
 * amount (spend in nano-dollars, input + output tokens, 1 request). Pure functions, no I/O.
 */
import { bucketExpiresAt, calendarWindow, dimensionKey, rollingBucket, toNano, type Metric, type Span } from "@meter/rules";
import type { PlanLimit } from "@meter/lib/plan-limits";
import { encodeKey } from "../domain/field-keys.ts";

/** A limit of a plan as ingestion reads it; `scope` only counts on a team's plan (BUDGETS.md §4). */
export type WindowLimit = PlanLimit;

/** What of a plan the windows need. */
export interface WindowPlan {
  limits: readonly WindowLimit[];
  timeZone: string;
}

/**
 * One window's share of an event, kept on the stored event so that whoever completes its job
 * (the request, a retry, the recovery sweep) adds exactly this. `key` is the window document's
 * field name (windowField); `end` (epoch ms) is when the entry stops mattering: the window's
 * end, or when a rolling bucket ages out.
 */
export interface WindowShare {
  key: string;
  end: number;
  n: number;
}

/** The field of a window document holding a dimension's window (or bucket) that starts at `start`. */
export function windowField(dimension: string, start: number): string {
  return `${encodeKey(dimension)}|${start}`;
}

/** The window of `limit` holding `t`, and when its entry may go. */
export function windowAt(limit: WindowLimit, t: number, timeZone: string, period: { start: Date; end: Date }): Span & { expires: number } {
  if (limit.window === "rolling") {
    const b = rollingBucket(limit.duration_minutes ?? 1, t);
    return { ...b, expires: bucketExpiresAt({ start: b.start, used: 0 }, limit.duration_minutes ?? 1) };
  }
  if (limit.window === "period") return { start: period.start.getTime(), end: period.end.getTime(), expires: period.end.getTime() };
  const w = calendarWindow(limit.window, t, timeZone);
  return { start: w.start, end: w.end, expires: w.end };
}

/** What an event adds to a limit of `metric`. */
function amount(metric: Metric, e: CountedEvent): number {
  if (metric === "spend") return toNano(e.cost_total);
  if (metric === "tokens") return e.input_tokens + e.output_tokens;
  return 1;
}

export interface CountedEvent {
  timestamp: Date;
  model: string | null;
  input_tokens: number;
  output_tokens: number;
  cost_total: number;
}

/**
 * The shares of one event, one per distinct dimension (two limits counting the same thing
 * share counters), leaving out windows that ended by `now`: they gate nothing any more.
 * Undefined when the plan has no limits, so events of plans without windows stay as they were.
 */
export function windowShares(plan: WindowPlan | null, period: { start: Date; end: Date }, e: CountedEvent, now: Date): WindowShare[] | undefined {
  if (!plan || plan.limits.length === 0) return undefined;
  const t = e.timestamp.getTime();
  const out = new Map<string, WindowShare>();
  for (const l of plan.limits) {
    if (l.model !== null && l.model !== e.model) continue;
    const dimension = dimensionKey({ metric: l.metric, window: l.window, duration_minutes: l.duration_minutes, model: l.model });
    const w = windowAt(l, t, plan.timeZone, period);
    if (w.expires <= now.getTime()) continue;
    const key = windowField(dimension, w.start);
    if (!out.has(key)) out.set(key, { key, end: w.expires, n: amount(l.metric, e) });
  }
  return out.size === 0 ? undefined : [...out.values()];
}

/** One window document's share of a job: the sum per field of its events' shares still live at `now`. */
export interface WindowDelta {
  /** The window document: one per (product, user), or per (product, team) (windowDocId). */
  id: string;
  productId: string;
  userId: string;
  add: Map<string, WindowShare>;
  /** What events naming a budget lease added, by lease id and field (settled against its slices: windows/slices.ts). */
  byLease?: Map<string, Map<string, number>>;
  /** Some of the shares came from events that name no lease. */
  unleased?: boolean;
  /** Set before the update: the slices' `spent` increments and whether the version is bumped (windowSettlement). */
  settle?: { spent: Record<string, number>; bump: boolean };
}

/**
 * A user's (or a team's) window document: `<product>|w|<user>`, in the "counters" collection
 * beside the user's period counters (`<product>|<period start>|<user>`, `<product>|month|...`),
 * which it never meets since product ids hold no `|` (a team's: in "team_counters", the same);
 * so a session reads both with one command.
 */
export function windowDocId(productId: string, ownerId: string): string {
  return `${productId}|w|${ownerId}`;
}

export function windowDeltas(
  events: readonly { product_id: string; user_id: string; windows?: WindowShare[]; lease_id?: string | null }[],
  now: Date,
): WindowDelta[] {
  const out = new Map<string, WindowDelta>();
  for (const e of events) {
    for (const s of e.windows ?? []) {
      if (s.end <= now.getTime()) continue;
      const id = windowDocId(e.product_id, e.user_id);
      let d = out.get(id);
      if (!d) out.set(id, (d = { id, productId: e.product_id, userId: e.user_id, add: new Map() }));
      const prev = d.add.get(s.key);
      d.add.set(s.key, { key: s.key, end: s.end, n: (prev?.n ?? 0) + s.n });
      if (!e.lease_id) {
        d.unleased = true;
        continue;
      }
      d.byLease ??= new Map();
      let l = d.byLease.get(e.lease_id);
      if (!l) d.byLease.set(e.lease_id, (l = new Map()));
      l.set(s.key, (l.get(s.key) ?? 0) + s.n);
    }
  }
  return [...out.values()];
}
