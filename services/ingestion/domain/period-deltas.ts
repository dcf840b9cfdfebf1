import { calendarMonth } from "@meter/rules";
import { monthCounterId } from "./counter-ids.ts";
import type { CounterDelta } from "./counter-delta.ts";
import { sum, type Countable } from "./totals.ts";

/** What of an event decides its counters: its owner's period counter and the event's time. */
export interface Attributed extends Countable {
  counter_id: string;
  period_start: Date;
  period_end: Date;
  timestamp: Date;
}

export function groupBy<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const t of items) {
    const list = out.get(key(t));
    if (list) list.push(t);
    else out.set(key(t), [t]);
  }
  return out;
}

/**
 * The counter shares of a job's events: each event goes to its period's counter, and to its
 * month's counter unless the period starts where the event's month starts, in which case the
 * period counter carries it as its month share (CounterDoc.month). `user_id` names the owner
 * (a team's service id for a team's counters). `limit` is the first event of each period.
 */
export function deltas<E extends Attributed>(inserted: readonly E[]): {
  periods: { delta: CounterDelta; limit: E; events: E[] }[];
  months: CounterDelta[];
} {
  // Each event's calendar month, worked out once (it decides both the share and the month counter).
  const monthOf = new Map(inserted.map((e) => [e, calendarMonth(e.timestamp)]));
  const periods = [...groupBy(inserted, (d) => d.counter_id)].map(([id, list]) => {
    const first = list[0]!;
    const folded = list.filter((e) => monthOf.get(e)!.start.getTime() === first.period_start.getTime());
    const delta: CounterDelta = {
      id,
      productId: first.product_id,
      userId: first.user_id,
      start: first.period_start,
      end: first.period_end,
      add: sum(list),
    };
    if (folded.length > 0) delta.month = folded.length === list.length ? delta.add : sum(folded);
    return { delta, limit: first, events: list };
  });
  // The month's counter has no plan and no limit: it only answers usage by calendar month.
  const rest = inserted.filter((e) => monthOf.get(e)!.start.getTime() !== e.period_start.getTime());
  const months = [...groupBy(rest, (d) => monthCounterId(d.product_id, d.user_id, monthOf.get(d)!.start))].map(([id, list]) => {
    const month = monthOf.get(list[0]!)!;
    return { id, productId: list[0]!.product_id, userId: list[0]!.user_id, ...month, add: sum(list) };
  });
  return { periods, months };
}
