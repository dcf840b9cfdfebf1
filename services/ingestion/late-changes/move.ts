import { createHash } from "node:crypto";
import pMap from "p-map";
import type { KnownUser } from "../adapters/plans.ts";
import { calendarMonth, hasThresholds, periodAt, toNano, type SubscriptionWindow } from "@meter/rules";
import { attribute, type Attribution } from "../domain/attribution.ts";
import { counterId, monthCounterId } from "../domain/counter-ids.ts";
import { negate, plus, sum } from "../domain/totals.ts";
import type { CounterDelta } from "../domain/counter-delta.ts";
import type { CounterStore } from "../store/counters.ts";
import type { UsageEventDoc, UsageEventStore } from "../store/usage-events.ts";
import { recordCrossings, type CrossingDeps } from "../thresholds/crossings.ts";
import { arrivalList, listId, type ArrivalStore } from "./arrivals.ts";
import { moveDrawn, type AccountDeps } from "../credits/settle.ts";

/**
 * A subscription recorded after events stamped inside its dates arrived: those events were
 * counted in the period the history gave before it (an upgrade with fresh dates starting a
 * moment before the billing system told us). They move to the new period here, when the
 * change is first seen (follow.ts says when).
 *
 * Finding them costs no scan: every job keeps, for the late-change window, the ids of its
 * events in each period counter (arrivals.ts), and per product and 10 seconds which jobs
 * did. A subscription recorded within the window whose dates began before now names the
 * counters of the earlier history that may hold such events; the jobs since its start name
 * their lists, read by `_id`, and the lists the events.
 *
 * A move is two guarded steps, each applied once however often it runs or whoever runs it:
 * the moved events' totals go from the old counter to the new ones (and between month
 * counters) as one job keyed by the list as read (its counters' guards), then the list is
 * replaced by what stayed if it still holds what was read, and the moved events are listed
 * under the new counter (so that a further change can move them again).
 */

/** What moving events needs: the stores it reads and writes, and the crossings it records. */
export interface MoveDeps extends CrossingDeps, AccountDeps {
  arrivals: Pick<ArrivalStore, "jobsSince" | "get" | "record" | "replace">;
  events: Pick<UsageEventStore, "getMany">;
  counters: Pick<CounterStore, "add" | "spends">;
  /** How long after arriving an event may still move; 0: never. */
  lateChangeWindowMs: number;
}

/** Most billing windows followed from a change's start to now. */
const MAX_WINDOWS = 64;

/** The windows `history` gives the times from `from` to `until`. */
function windows(history: readonly SubscriptionWindow[], from: Date, until: Date): { start: Date; end: Date }[] {
  const out: { start: Date; end: Date }[] = [];
  for (let t = from; t <= until && out.length < MAX_WINDOWS; ) {
    const p = periodAt(history, t);
    out.push({ start: p.start, end: p.end });
    t = p.end;
  }
  return out;
}

/**
 * The windows the history before subscription `i` gave the times from its start to `until`
 * where the whole history gives another start: the counters that may hold events now belonging
 * elsewhere. None when the subscription only continues what was counted (a first subscription in
 * calendar months, a renewal with the start its rolled-on window had).
 */
function changedWindows(history: readonly SubscriptionWindow[], i: number, until: Date): { start: Date; end: Date }[] {
  const s = history[i]!;
  if (!s.periodStart || s.periodStart > until) return [];
  const changed: { start: Date; end: Date }[] = [];
  for (const w of windows(history.slice(0, i), s.periodStart, until)) {
    const from = w.start < s.periodStart ? s.periodStart : w.start;
    const end = w.end <= until ? new Date(w.end.getTime() - 1) : until;
    if (windows(history, from, end).some((c) => c.start.getTime() !== w.start.getTime())) changed.push(w);
  }
  return changed;
}

/** Whether subscription `i` of `history` takes any event stamped up to `until` out of the window it was counted in. */
export function movesEvents(history: readonly SubscriptionWindow[], i: number, until: Date): boolean {
  return changedWindows(history, i, until).length > 0;
}

/**
 * Counters of the user that may hold events now belonging elsewhere: for each subscription
 * recorded since `recordedSince`, its changed windows up to `now`. `since` is the earliest
 * start of such a subscription: no event stamped before it moves.
 */
function suspects(productId: string, userId: string, history: readonly SubscriptionWindow[], now: Date, recordedSince: number) {
  const counters = new Map<string, { start: Date; end: Date }>();
  let since: Date | undefined;
  history.forEach((s, i) => {
    if (s.effectiveAt.getTime() < recordedSince) return;
    const changed = changedWindows(history, i, now);
    for (const w of changed) counters.set(counterId(productId, userId, w.start), w);
    if (changed.length > 0 && (!since || s.periodStart! < since)) since = s.periodStart!;
  });
  return since ? { counters, since } : null;
}

interface Entry {
  list: { _id: string; ids: string[]; latest: number };
  counterId: string;
  /** The old window. */
  window: { start: Date; end: Date };
  userId: string;
  user: KnownUser;
  since: Date;
}

/**
 * Moves the listed events of recently changed users to the periods their whole history gives
 * them. Returns the users whose counters changed. Costs nothing for a user without a change
 * recorded within the window; for one with, a read of the product's recent jobs and one of
 * their lists for the suspect counters.
 */
export async function settleLateChanges(
  deps: MoveDeps,
  productId: string,
  users: ReadonlyMap<string, KnownUser>,
  /** Only jobs that recorded their lists from then on (a change applied before: what came since). */
  recordedFrom?: Date,
): Promise<Set<string>> {
  const changed = new Set<string>();
  if (deps.lateChangeWindowMs <= 0) return changed;
  const now = deps.now();
  const recordedSince = now.getTime() - deps.lateChangeWindowMs;
  const suspect = new Map<string, Omit<Entry, "list" | "counterId">>();
  let from: Date | undefined;
  for (const [userId, user] of users) {
    const s = suspects(productId, userId, user.subscriptions, now, recordedSince);
    if (!s) continue;
    for (const [id, window] of s.counters) suspect.set(id, { window, userId, user, since: s.since });
    if (!from || s.since < from) from = s.since;
  }
  if (!from) return changed;
  // Lists are written when a job completes, so a job since the start may hold such events.
  const jobs = await deps.arrivals.jobsSince(productId, recordedFrom && recordedFrom > from ? recordedFrom : from, now);
  if (jobs.length === 0) return changed;
  const entries: Entry[] = [];
  for (const list of await deps.arrivals.get(jobs.flatMap((j) => [...suspect.keys()].map((c) => listId(j, c))))) {
    const counterId = list._id.slice(list._id.indexOf("|") + 1);
    const owner = suspect.get(counterId)!;
    if (list.latest >= owner.since.getTime()) entries.push({ list, counterId, ...owner });
  }
  if (entries.length === 0) return changed;
  const stored = await deps.events.getMany(entries.flatMap((e) => e.list.ids.map((id) => `${productId}/${id}`)));
  const byId = new Map(stored.map((e) => [e._id, e]));
  await pMap(
    entries,
    async (entry) => {
      if (await move(deps, productId, entry, byId)) changed.add(entry.userId);
    },
    { concurrency: 4 },
  );
  return changed;
}

const sameStart = (a: Date, b: Date) => a.getTime() === b.getTime();

/** Moves one list's events that now belong to other periods; false when none does. */
async function move(deps: MoveDeps, productId: string, entry: Entry, byId: ReadonlyMap<string, UsageEventDoc>): Promise<boolean> {
  const { list, counterId: from, window, userId, user, since } = entry;
  const going = new Map<string, { a: Attribution; events: UsageEventDoc[] }>();
  const staying: string[] = [];
  for (const id of list.ids) {
    const e = byId.get(`${productId}/${id}`);
    const a = e && e.timestamp >= since ? attribute(productId, userId, user, e.timestamp) : null;
    if (!e || !a || a.counterId === from) {
      if (e) staying.push(id);
      continue;
    }
    const group = going.get(a.counterId);
    if (group) group.events.push(e);
    else going.set(a.counterId, { a, events: [e] });
  }
  if (going.size === 0) return false;

  // Out of the old period, into the new ones; a month's counter gains the events its new
  // period does not carry as its month share and loses those the old period did not.
  const periods: { delta: CounterDelta; limit: Pick<UsageEventDoc, "plan_name" | "spend_limit">; events: UsageEventDoc[] }[] = [];
  const months = new Map<string, { start: Date; end: Date; gains: UsageEventDoc[]; losses: UsageEventDoc[] }>();
  const moved: UsageEventDoc[] = [];
  const oldShare: UsageEventDoc[] = [];
  for (const { a, events } of going.values()) {
    const delta: CounterDelta = { id: a.counterId, productId, userId, start: a.period.start, end: a.period.end, add: sum(events) };
    const share = events.filter((e) => sameStart(calendarMonth(e.timestamp).start, a.period.start));
    if (share.length > 0) delta.month = sum(share);
    periods.push({ delta, limit: { plan_name: a.plan?.name ?? null, spend_limit: a.plan?.maxSpendPerPeriod ?? null }, events });
    for (const e of events) {
      moved.push(e);
      const m = calendarMonth(e.timestamp);
      const id = monthCounterId(productId, userId, m.start);
      const month = months.get(id) ?? { ...m, gains: [], losses: [] };
      months.set(id, month);
      if (!sameStart(m.start, a.period.start)) month.gains.push(e);
      if (sameStart(m.start, window.start)) oldShare.push(e);
      else month.losses.push(e);
    }
  }
  const out: CounterDelta = { id: from, productId, userId, ...window, add: negate(sum(moved)) };
  if (oldShare.length > 0) out.month = negate(sum(oldShare));
  const monthDeltas: CounterDelta[] = [];
  for (const [id, m] of months) {
    const even = m.gains.length === m.losses.length && m.gains.every((e, i) => e === m.losses[i]);
    if (!even) monthDeltas.push({ id, productId, userId, start: m.start, end: m.end, add: plus(sum(m.gains), negate(sum(m.losses)))! });
  }
  const job = `mv_${createHash("sha256").update(`${list._id}\n${JSON.stringify(list.ids)}`).digest("hex").slice(0, 32)}`;
  const limited = periods.filter((p) => hasThresholds(p.limit.spend_limit));
  const added = [out, ...periods.map((p) => p.delta), ...monthDeltas];
  // The moved events are listed under their new counters first: findable there from now on.
  const now = deps.now();
  await deps.arrivals.record(productId, job, periods.map((p) => arrivalList(p.delta.id, p.events)), now);
  const after = await deps.counters.add(job, added, new Set(limited.map((p) => p.delta.id)));
  for (const p of limited) {
    const c = after.get(p.delta.id);
    if (c) await recordCrossings(deps, c, p.delta, p.limit);
  }
  // Credits the old period drew for the moved events follow them (before the list is replaced: a
  // mover cut off before this computes the same job again and the account takes it once).
  const drew = moved.find((e) => e.credits !== undefined && e.spend_limit !== null);
  if (drew) {
    const spend = (await deps.counters.spends([from])).get(from) ?? 0;
    await moveDrawn(deps, {
      productId,
      userId,
      job,
      from: { key: String(window.start.getTime()), spend, allowance: toNano(drew.spend_limit!) },
      to: periods.map((p) => ({ key: String(p.delta.start.getTime()), end: p.delta.end, cost: p.delta.add.cost })),
    });
  }
  if (await deps.arrivals.replace(list._id, list.ids, staying)) {
    deps.logger.info({ productId, user: userId, from, events: moved.length }, "events moved to the period of a subscription recorded after they arrived");
  }
  // The move's guards stay in the counters (unlike a usage job's, which go with the next update):
  // a mover that read the list before it changed, on another replica or beside this one,
  // computes this same job later and must find them. A move is rare (a change recorded late),
  // so they are few.
  return true;
}
