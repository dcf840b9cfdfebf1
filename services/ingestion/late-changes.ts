import { createHash } from "node:crypto";
import pMap from "p-map";
import type { KnownUser } from "./adapters/plans.ts";
import type { IngestionDeps } from "./deps.ts";
import { calendarMonth, periodAt, type SubscriptionWindow } from "./domain/period.ts";
import { hasThresholds } from "./domain/thresholds.ts";
import {
  counterId,
  listing,
  monthCounterId,
  negate,
  parseListing,
  plus,
  sum,
  type CounterDelta,
  type CounterDoc,
  type Listing,
} from "./store/counters.ts";
import type { UsageEventDoc } from "./store/usage-events.ts";
import { attribute, recordCrossings, releaseEntries, type Attribution } from "./usage.ts";

/**
 * A subscription recorded after events stamped inside its dates arrived: those events were
 * counted in the period the history gave before it (an upgrade with fresh dates starting a
 * moment before the billing system told us). They move to the new period here, the next time
 * the user is touched (a batch with the user's events, the session, usage, a manual event, a
 * lease), before that call answers.
 *
 * Finding them costs no scan: each job's guard entry in a period counter lists the job's events
 * stamped at most the late-change window before they arrived (a Listing), and stays that long
 * after the job closed. A subscription recorded within the window whose dates started before
 * now names the counters of the earlier history that may hold such events; a Listing whose
 * latest event is stamped after its start names the events, read by `_id`.
 *
 * A move is two guarded steps, each applied once however often it runs or whoever runs it:
 * the moved events are added to their new counters (and month counters) as a job keyed by the
 * old entry's content, then taken out of the old counter, whose entry becomes the Listing of
 * what stayed (the guard of that step is the entry's old value).
 */

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
 * Counters of the user that may hold events now belonging elsewhere: for each subscription
 * recorded since `recordedSince` whose dates began before `now`, the windows the history before
 * it gave from its start to now, where the whole history starts other windows. `since` is the
 * earliest such start: no event stamped before it moves.
 */
function suspects(productId: string, userId: string, history: readonly SubscriptionWindow[], now: Date, recordedSince: number) {
  const ids = new Set<string>();
  let since: Date | undefined;
  history.forEach((s, i) => {
    if (!s.periodStart || s.effectiveAt.getTime() < recordedSince || s.periodStart > now) return;
    for (const w of windows(history.slice(0, i), s.periodStart, now)) {
      const from = w.start < s.periodStart ? s.periodStart : w.start;
      const until = w.end <= now ? new Date(w.end.getTime() - 1) : now;
      if (windows(history, from, until).some((c) => c.start.getTime() !== w.start.getTime())) {
        ids.add(counterId(productId, userId, w.start));
        if (!since || s.periodStart < since) since = s.periodStart;
      }
    }
  });
  return since ? { ids, since } : null;
}

interface Entry {
  counter: CounterDoc;
  key: string;
  value: string;
  listed: Listing;
  userId: string;
  user: KnownUser;
  since: Date;
}

/**
 * Moves the listed events of recently changed users to the periods their whole history gives
 * them. Returns the users whose counters changed. Costs nothing for a user without a change
 * recorded within the window, and one read of the suspect counters for one with.
 */
export async function settleLateChanges(deps: IngestionDeps, productId: string, users: ReadonlyMap<string, KnownUser>): Promise<Set<string>> {
  const changed = new Set<string>();
  if (deps.lateChangeWindowMs <= 0) return changed;
  const now = deps.now();
  const owners = new Map<string, { userId: string; user: KnownUser; since: Date }>();
  for (const [userId, user] of users) {
    const s = suspects(productId, userId, user.subscriptions, now, now.getTime() - deps.lateChangeWindowMs);
    for (const id of s?.ids ?? []) owners.set(id, { userId, user, since: s!.since });
  }
  if (owners.size === 0) return changed;
  const entries: Entry[] = [];
  for (const counter of await deps.counters.getMany([...owners.keys()])) {
    const owner = owners.get(counter._id)!;
    for (const [key, value] of Object.entries(counter.jobs ?? {})) {
      const listed = parseListing(value);
      if (listed && listed.latest >= owner.since.getTime()) entries.push({ counter, key, value: value as string, listed, ...owner });
    }
  }
  if (entries.length === 0) return changed;
  const stored = await deps.events.getMany(entries.flatMap((e) => e.listed.ids.map((id) => `${productId}/${id}`)));
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

/** The same for one user (the calls that serve a single user). */
export function settleUser(deps: IngestionDeps, productId: string, userId: string, user: KnownUser): Promise<Set<string>> {
  return settleLateChanges(deps, productId, new Map([[userId, user]]));
}

const sameStart = (a: Date, b: Date) => a.getTime() === b.getTime();

/** Moves one entry's events that now belong to other periods; false when none does. */
async function move(deps: IngestionDeps, productId: string, entry: Entry, byId: ReadonlyMap<string, UsageEventDoc>): Promise<boolean> {
  const { counter, key, value, listed, userId, user, since } = entry;
  const going = new Map<string, { a: Attribution; events: UsageEventDoc[] }>();
  const staying: UsageEventDoc[] = [];
  for (const id of listed.ids) {
    const e = byId.get(`${productId}/${id}`);
    if (!e) continue;
    const a = e.timestamp >= since ? attribute(productId, userId, user, e.timestamp) : null;
    if (!a || a.counterId === counter._id) {
      staying.push(e);
      continue;
    }
    const group = going.get(a.counterId);
    if (group) group.events.push(e);
    else going.set(a.counterId, { a, events: [e] });
  }
  if (going.size === 0) return false;

  // Into the new periods; a month's counter gains the events its new period does not carry as
  // its month share and loses those the old period did not.
  const periods: { delta: CounterDelta; limit: Pick<UsageEventDoc, "plan_name" | "spend_limit"> }[] = [];
  const months = new Map<string, { start: Date; end: Date; gains: UsageEventDoc[]; losses: UsageEventDoc[] }>();
  const moved: UsageEventDoc[] = [];
  const oldShare: UsageEventDoc[] = [];
  for (const { a, events } of going.values()) {
    const delta: CounterDelta = { id: a.counterId, productId, userId, start: a.period.start, end: a.period.end, add: sum(events) };
    delta.listed = listing(productId, events);
    const share = events.filter((e) => sameStart(calendarMonth(e.timestamp).start, a.period.start));
    if (share.length > 0) delta.month = sum(share);
    periods.push({ delta, limit: { plan_name: a.plan?.name ?? null, spend_limit: a.plan?.maxSpendPerPeriod ?? null } });
    for (const e of events) {
      moved.push(e);
      const m = calendarMonth(e.timestamp);
      const id = monthCounterId(productId, userId, m.start);
      const month = months.get(id) ?? { ...m, gains: [], losses: [] };
      months.set(id, month);
      if (!sameStart(m.start, a.period.start)) month.gains.push(e);
      if (sameStart(m.start, counter.period_start)) oldShare.push(e);
      else month.losses.push(e);
    }
  }
  const monthDeltas: CounterDelta[] = [];
  for (const [id, m] of months) {
    const even = m.gains.length === m.losses.length && m.gains.every((e, i) => e === m.losses[i]);
    if (!even) monthDeltas.push({ id, productId, userId, start: m.start, end: m.end, add: plus(sum(m.gains), negate(sum(m.losses)))! });
  }
  const job = `mv_${createHash("sha256").update(`${counter._id}\n${key}\n${value}`).digest("hex").slice(0, 32)}`;
  const limited = periods.filter((p) => hasThresholds(p.limit.spend_limit));
  const added = [...periods.map((p) => p.delta), ...monthDeltas];
  const after = await deps.counters.add(job, added, new Set(limited.map((p) => p.delta.id)));
  for (const p of limited) {
    const c = after.get(p.delta.id);
    if (c) await recordCrossings(deps, c, p.delta, p.limit);
  }

  // Out of the old one, once: guarded by the entry as it was read.
  const out = await deps.counters.takeOut(
    counter._id,
    key,
    value,
    listing(productId, staying),
    negate(sum(moved)),
    oldShare.length > 0 ? negate(sum(oldShare)) : undefined,
  );
  releaseEntries(deps, job, added);
  if (out) deps.logger.info({ productId, user: userId, from: counter._id, events: moved.length }, "events moved to the period of a subscription recorded after they arrived");
  return true;
}
