import { createHash } from "node:crypto";
import pMap from "p-map";
import type { KnownTeam, KnownUser, PlanInfo } from "../adapters/plans.ts";
import { calendarMonth, hasThresholds, normalizeModel, periodAt, toNano, type BillingPeriod, type SubscriptionWindow } from "@meter/rules";
import { attribute, attributeTeam, drawsCredits, teamAt, type TeamAttribution } from "../domain/attribution.ts";
import { counterId, monthCounterId } from "../domain/counter-ids.ts";
import { negate, plus, sum, type Countable, type Totals } from "../domain/totals.ts";
import type { CounterDelta } from "../domain/counter-delta.ts";
import type { CounterStore } from "../store/counters.ts";
import type { UsageEventDoc, UsageEventStore } from "../store/usage-events.ts";
import { recordCrossings, type CrossingDeps } from "../thresholds/crossings.ts";
import { arrivalList, listId, teamListKey, type ArrivalStore } from "./arrivals.ts";
import { drawsOwnCredits, moveDrawn, type AccountDeps } from "../credits/settle.ts";
import { teamOwner, userOwner } from "../credits/account.ts";
import { inPeriodWindow, memberPrefix, poolCounterId, teamShare } from "../teams/shares.ts";
import { windowDocId, windowShares, type WindowDelta, type WindowPlan, type WindowShare } from "../windows/shares.ts";
import type { WindowStore } from "../windows/store.ts";
import { teamCountable } from "../teams/count.ts";

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
 *
 * A team's subscription recorded late moves its members' events between the team's periods
 * the same way (BUDGETS.md §4): jobs list their events per team period counter too, and a
 * member's call, a read about the team or the follower that meets the team's change moves the
 * team's shares (its period, month and pool counters, the window counts its period counter
 * held, the pool's draws; not the shares `movable` holds back); the members' own counters stay
 * as they are.
 */

/** What moving events needs: the stores it reads and writes, and the crossings it records. */
export interface MoveDeps extends CrossingDeps, AccountDeps {
  arrivals: Pick<ArrivalStore, "jobsSince" | "get" | "record" | "replace">;
  events: Pick<UsageEventStore, "getMany">;
  counters: Pick<CounterStore, "add" | "spends">;
  teamCounters: Pick<CounterStore, "add" | "spends">;
  windows: Pick<WindowStore, "add">;
  teamWindows: Pick<WindowStore, "add">;
  /** How long after arriving an event may still move; 0: never. */
  lateChangeWindowMs: number;
}

/** Most billing windows followed from a change's start to now. */
const MAX_WINDOWS = 64;

/** A billing window, with the plan in force in it (none: no subscription covers it). */
interface Window {
  start: Date;
  end: Date;
  planId?: string;
}

/** The windows `history` gives the times from `from` to `until`. */
function windows(history: readonly SubscriptionWindow[], from: Date, until: Date): Window[] {
  const out: Window[] = [];
  for (let t = from; t <= until && out.length < MAX_WINDOWS; ) {
    const p = periodAt(history, t);
    out.push({ start: p.start, end: p.end, ...(p.subscription && { planId: p.subscription.planId }) });
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
function changedWindows(history: readonly SubscriptionWindow[], i: number, until: Date): Window[] {
  const s = history[i]!;
  if (!s.periodStart || s.periodStart > until) return [];
  const changed: Window[] = [];
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
 * Counters of a user (or a team, `ownerId` its service id) that may hold events now belonging
 * elsewhere: for each subscription recorded since `recordedSince`, its changed windows up to
 * `now`. `since` is the earliest start of such a subscription: no event stamped before it moves.
 */
function suspects(productId: string, ownerId: string, history: readonly SubscriptionWindow[], now: Date, recordedSince: number) {
  const counters = new Map<string, Window>();
  let since: Date | undefined;
  history.forEach((s, i) => {
    if (s.effectiveAt.getTime() < recordedSince) return;
    const changed = changedWindows(history, i, now);
    for (const w of changed) counters.set(counterId(productId, ownerId, w.start), w);
    if (changed.length > 0 && (!since || s.periodStart! < since)) since = s.periodStart!;
  });
  return since ? { counters, since } : null;
}

/** Whose counters a list names: a user's own, or a team's. */
type Owner = { kind: "user"; id: string; user: KnownUser } | { kind: "team"; id: string; team: KnownTeam };

interface Entry {
  list: { _id: string; ids: string[]; latest: number };
  counterId: string;
  /** The old window, with its plan as the history before the change gave it. */
  window: Window;
  owner: Owner;
  since: Date;
}

/** The owner's period of an event stamped `t`: the counter it belongs in now, the limit its thresholds are checked against (users only) and, for a team, whether its pool pays a share whole. */
function periodOf(
  productId: string,
  owner: Owner,
  t: Date,
): {
  counterId: string;
  period: BillingPeriod;
  limit: Pick<UsageEventDoc, "plan_name" | "spend_limit">;
  /** A user's plan in that period (its windows count the event there). */
  plan?: PlanInfo | null;
  /** A team's period, plan and counter there. */
  team?: TeamAttribution;
  poolPays?: (e: UsageEventDoc) => boolean;
} | null {
  if (owner.kind === "team") {
    const a = teamAt(productId, owner.team, t);
    return a && { counterId: a.counterId, period: a.period, limit: { plan_name: a.plan.name, spend_limit: null }, team: a, poolPays: poolPaysUnder(a.plan) };
  }
  const a = attribute(productId, owner.id, owner.user, t);
  return { counterId: a.counterId, period: a.period, limit: { plan_name: a.plan?.name ?? null, spend_limit: a.plan?.maxSpendPerPeriod ?? null }, plan: a.plan };
}

/** Whether a team plan's pool pays a member's event whole, as teams/shares.ts addTeamShare decides `direct`: the team plan draws credits and the member's own plan does not. */
function poolPaysUnder(plan: PlanInfo | undefined): (e: UsageEventDoc) => boolean {
  const pool = drawsCredits(plan);
  return (e) => pool && e.credits === undefined;
}

/**
 * Whether the member's team's pool pays the event whole, so that the member's own credits never
 * pay for it wherever the member's own periods move it: the pool paid it on arrival
 * (teams/shares.ts `direct`: the member's own plan drew no credits then; what the pool drew
 * never goes back), or the team's plan at its time, as now recorded, draws credits and the
 * member's own plan drew none on arrival (a team's move put it in the pool counter, as
 * poolPaysUnder decides).
 */
function paidByPool(productId: string, user: KnownUser, e: UsageEventDoc): boolean {
  if (e.team?.credits?.direct === true) return true;
  return e.team !== undefined && e.credits === undefined && drawsCredits(attributeTeam(productId, user, e.timestamp)?.plan);
}

/** What an event adds to its owner's counters: the event itself, or its team share as teams/count.ts counts it. */
function countable(owner: Owner, e: UsageEventDoc): Countable {
  return owner.kind === "user" ? e : teamCountable(e, e.team!);
}

/** An event and what it adds to a counter. */
interface Counted {
  e: UsageEventDoc;
  c: Countable;
}

/**
 * What an event adds to its owner's counters in a period whose plan is `plan`: its model as that
 * plan names it (the nearest to the name sent, sentModel), or for a user without a plan there as
 * its team's plan does (usage/record.ts). An event folded into OTHER_MODELS stays there; with no
 * plan to name it, as stored.
 */
function named(productId: string, owner: Owner, e: UsageEventDoc, plan: Pick<PlanInfo, "pricing"> | null | undefined): Countable {
  const c = countable(owner, e);
  const naming = plan ?? (owner.kind === "user" ? attributeTeam(productId, owner.user, e.timestamp)?.plan : undefined);
  return c.counted_model !== undefined || !naming ? c : { ...c, model: modelUnder(naming, e) ?? c.model };
}

/** Totals with the models whose changes cancel out left out; null when nothing changes. */
function withoutZeros(t: Totals): Totals | null {
  const keep = (m: Record<string, number>) => Object.fromEntries(Object.entries(m).filter(([, v]) => v !== 0));
  const out = { ...t, tokens_by_model: keep(t.tokens_by_model), cost_by_model: keep(t.cost_by_model) };
  const nothing = out.cost === 0 && out.tokens === 0 && out.tool_calls === 0 && out.events === 0 && Object.keys(out.tokens_by_model).length + Object.keys(out.cost_by_model).length === 0;
  return nothing ? null : out;
}

/**
 * Whether a listed event may move. A team's share moves unless both the team plan and the
 * member's own plan drew credits for it (`credits` without `direct`): what a member's own credits
 * leave is handed to the pool in aggregate per member period, filed under the team period of the
 * hand-over (credits/settle.ts settlePools), with no step to move it. A `direct` share (the pool
 * pays it whole) moves with its pool counter and the pool's draws.
 */
const movable = (owner: Owner, e: UsageEventDoc) => owner.kind === "user" || (e.team?.id === owner.id && (e.team.credits === undefined || e.team.credits.direct === true));

/**
 * Moves the listed events of recently changed users to the periods their whole history gives
 * them. Returns how many lists had events moved: counted per list, not per user, since a read
 * about a team moves its members' shares without naming a member. Costs nothing for a user
 * without a change recorded within the window; for one with, a read of the product's recent
 * jobs and one of their lists for the suspect counters.
 */
export async function settleLateChanges(
  deps: MoveDeps,
  productId: string,
  users: ReadonlyMap<string, KnownUser>,
  /** Only jobs that recorded their lists from then on (a change applied before: what came since). */
  recordedFrom?: Date,
  /** Teams whose changes are applied too, beside those of the users' teams (a read about a team). */
  teamsAlso: readonly KnownTeam[] = [],
): Promise<number> {
  if (deps.lateChangeWindowMs <= 0) return 0;
  const now = deps.now();
  const recordedSince = now.getTime() - deps.lateChangeWindowMs;
  // By list key (arrivals.ts): a user's counter id, or a team's marked as such.
  const suspect = new Map<string, Omit<Entry, "list">>();
  let from: Date | undefined;
  const add = (owner: Owner, history: readonly SubscriptionWindow[], key: (counterId: string) => string) => {
    const s = suspects(productId, owner.id, history, now, recordedSince);
    if (!s) return;
    for (const [id, window] of s.counters) suspect.set(key(id), { counterId: id, window, owner, since: s.since });
    if (!from || s.since < from) from = s.since;
  };
  const teams = new Map<string, Extract<Owner, { kind: "team" }>>();
  for (const [userId, user] of users) {
    add({ kind: "user", id: userId, user }, user.subscriptions, (id) => id);
    // A team is applied from its first member's copy (follow.ts relies on it).
    for (const team of user.teams.values()) if (!teams.has(team.id)) teams.set(team.id, { kind: "team", id: team.id, team });
  }
  for (const team of teamsAlso) if (!teams.has(team.id)) teams.set(team.id, { kind: "team", id: team.id, team });
  for (const owner of teams.values()) add(owner, owner.team.subscriptions, teamListKey);
  if (!from) return 0;
  // Lists are written when a job completes, so a job since the start may hold such events.
  const jobs = await deps.arrivals.jobsSince(productId, recordedFrom && recordedFrom > from ? recordedFrom : from, now);
  if (jobs.length === 0) return 0;
  const entries: Entry[] = [];
  for (const list of await deps.arrivals.get(jobs.flatMap((j) => [...suspect.keys()].map((key) => listId(j, key))))) {
    const s = suspect.get(list._id.slice(list._id.indexOf("|") + 1))!;
    if (list.latest >= s.since.getTime()) entries.push({ list, ...s });
  }
  if (entries.length === 0) return 0;
  const stored = await deps.events.getMany(entries.flatMap((e) => e.list.ids.map((id) => `${productId}/${id}`)));
  const byId = new Map(stored.map((e) => [e._id, e]));
  const moved = await pMap(entries, (entry) => move(deps, productId, entry, byId), { concurrency: 4 });
  return moved.filter(Boolean).length;
}

const sameStart = (a: Date, b: Date) => a.getTime() === b.getTime();

/** Moves one list's events that now belong to other periods; false when none does. */
async function move(deps: MoveDeps, productId: string, entry: Entry, byId: ReadonlyMap<string, UsageEventDoc>): Promise<boolean> {
  const { list, counterId: from, window, owner, since } = entry;
  type Going = NonNullable<ReturnType<typeof periodOf>> & { events: UsageEventDoc[] };
  const going = new Map<string, Going>();
  const staying: string[] = [];
  for (const id of list.ids) {
    const e = byId.get(`${productId}/${id}`);
    const a = e && e.timestamp >= since && movable(owner, e) ? periodOf(productId, owner, e.timestamp) : null;
    if (!e || !a || a.counterId === from) {
      if (e) staying.push(id);
      continue;
    }
    const group = going.get(a.counterId);
    if (group) group.events.push(e);
    else going.set(a.counterId, { ...a, events: [e] });
  }
  if (going.size === 0) return false;

  // Counters file an event under its model as the period's plan names it (usage/record.ts): out of
  // the old period as it was counted there (stored on arrival; for an event an earlier move brought
  // in, as the old period's plan names it), into each new period as its plan names it. So a model
  // cap of the new plan counts what moved into its period.
  const fromPlan = window.planId === undefined ? null : ((owner.kind === "user" ? owner.user.plans : owner.team.plans).get(window.planId) ?? null);
  const arrivedIn = (e: UsageEventDoc, id: string) => (owner.kind === "user" ? e.counter_id : e.team!.counter_id) === id;
  const asCounted = (e: UsageEventDoc): Counted => ({ e, c: arrivedIn(e, from) ? countable(owner, e) : named(productId, owner, e, fromPlan) });
  const inGroup = (g: Going): Counted[] => g.events.map((e) => ({ e, c: named(productId, owner, e, owner.kind === "user" ? g.plan : g.team!.plan) }));
  // What a period's counter gains: the events' totals, and those stamped in the month the period starts with as its month share;
  // a user's, also what of them its plan draws credits for (CounterDelta.credited).
  const periodDelta = (id: string, period: { start: Date; end: Date }, events: readonly Counted[], credited: (e: UsageEventDoc) => boolean): CounterDelta => {
    const delta: CounterDelta = { id, productId, userId: owner.id, start: period.start, end: period.end, add: sum(events.map((x) => x.c)) };
    const share = events.filter((x) => sameStart(calendarMonth(x.e.timestamp).start, period.start));
    if (share.length > 0) delta.month = sum(share.map((x) => x.c));
    const drawn = owner.kind === "user" ? sum(events.filter((x) => credited(x.e)).map((x) => x.c)).cost : 0;
    if (drawn !== 0) delta.credited = drawn;
    return delta;
  };
  // What the old period's counter loses: the events, and their month share as it carried it; of
  // a user's, the spend its plan drew credits for, as stored on arrival or, for an event an
  // earlier move brought in, as the old period's plan decides now (readers keep the rest within
  // the spend: store/counters.ts spendOf).
  const fromDraws = drawsCredits(fromPlan);
  const pooled = (e: UsageEventDoc) => owner.kind === "user" && paidByPool(productId, owner.user, e);
  const outDelta = (id: string, events: readonly UsageEventDoc[]): CounterDelta => {
    const d = periodDelta(id, window, events.map(asCounted), (e) => (arrivedIn(e, from) ? e.credits !== undefined : fromDraws && !pooled(e)));
    return { ...d, add: negate(d.add), ...(d.month && { month: negate(d.month) }), ...(d.credited && { credited: -d.credited }) };
  };
  // Out of the old period, into the new ones; a month's counter gains the events its new
  // period does not carry as its month share and loses those the old period did not.
  const periods: { delta: CounterDelta; limit: Going["limit"]; events: UsageEventDoc[] }[] = [];
  const months = new Map<string, { start: Date; end: Date; gains: Counted[]; losses: Counted[] }>();
  const moved: UsageEventDoc[] = [];
  for (const g of going.values()) {
    const counted = inGroup(g);
    const draws = drawsCredits(g.plan);
    periods.push({ delta: periodDelta(g.counterId, g.period, counted, (e) => draws && !pooled(e)), limit: g.limit, events: g.events });
    for (const x of counted) {
      moved.push(x.e);
      const m = calendarMonth(x.e.timestamp);
      const id = monthCounterId(productId, owner.id, m.start);
      const month = months.get(id) ?? { ...m, gains: [], losses: [] };
      months.set(id, month);
      if (!sameStart(m.start, g.period.start)) month.gains.push(x);
      if (!sameStart(m.start, window.start)) month.losses.push(asCounted(x.e));
    }
  }
  const monthDeltas: CounterDelta[] = [];
  for (const [id, m] of months) {
    const add = withoutZeros(plus(sum(m.gains.map((x) => x.c)), negate(sum(m.losses.map((x) => x.c))))!);
    if (add) monthDeltas.push({ id, productId, userId: owner.id, start: m.start, end: m.end, add });
  }
  const out = outDelta(from, moved);
  const now = deps.now();
  // A team's pool counter (teams/shares.ts poolCounterId) holds the shares its pool pays whole: out
  // of the old one those counted there, into each new one those its plan's pool pays (an upgrade to
  // a plan that draws credits, recorded late, draws for what moved into it).
  // Counted in the old pool counter: as stored when it arrived there, or, when an earlier move
  // brought it, as the old period's plan pays it.
  const fromPays = poolPaysUnder(fromPlan ?? undefined);
  const inFromPool = (e: UsageEventDoc) => (e.team!.counter_id === from ? e.team!.credits?.direct === true : fromPays(e));
  const leaving = owner.kind === "team" ? moved.filter(inFromPool) : [];
  const poolOut = leaving.length > 0 ? outDelta(poolCounterId(from), leaving) : null;
  const poolsIn: CounterDelta[] = [];
  for (const g of going.values()) {
    const arriving = g.poolPays ? g.events.filter(g.poolPays) : [];
    if (arriving.length > 0) poolsIn.push(periodDelta(poolCounterId(g.counterId), g.period, inGroup({ ...g, events: arriving }), () => false));
  }
  // Window counts leave where the old period counted them and go where the new period's plan
  // counts them: a user's in its window document; a team's in its period counters (windows within
  // a period), its window document and its members' documents (member-scope windows). Each
  // document's version moves (`unleased`), so a lease grant computed before this is tried again.
  let windowDoc: WindowDelta | null = null;
  let userWindows = new Map<string, Map<string, WindowShare>>();
  if (owner.kind === "user") {
    userWindows.set(owner.id, userWindowMoves({ ...window, plan: fromPlan }, from, [...going.values()], now));
  } else {
    // teamShare reads only the bounds of the attribution's period.
    const fromTeam = fromPlan ? { team: owner.team, plan: fromPlan, counterId: from, period: { start: window.start, end: window.end, subscription: null, calendar: false } } : null;
    const w = teamWindowMoves({ counterId: from, start: window.start, end: window.end, team: fromTeam }, [...going.values()].map((g) => ({ team: g.team!, events: g.events })), now);
    if (w.out.size > 0) out.windows = w.out;
    for (const [id, add] of w.into) periods.find((p) => p.delta.id === id)!.delta.windows = add;
    windowDoc = { id: windowDocId(productId, owner.id), productId, userId: owner.id, add: w.doc, unleased: true };
    userWindows = w.members;
  }
  const userDocs = [...userWindows]
    .filter(([, add]) => add.size > 0)
    .map(([userId, add]): WindowDelta => ({ id: windowDocId(productId, userId), productId, userId, add, unleased: true }));
  const job = `mv_${createHash("sha256").update(`${list._id}\n${JSON.stringify(list.ids)}`).digest("hex").slice(0, 32)}`;
  const limited = periods.filter((p) => hasThresholds(p.limit.spend_limit));
  const added = [out, ...periods.map((p) => p.delta), ...monthDeltas, ...(poolOut ? [poolOut] : []), ...poolsIn];
  // The moved events are listed under their new counters first: findable there from now on.
  const key = owner.kind === "team" ? teamListKey : (id: string) => id;
  await deps.arrivals.record(productId, job, periods.map((p) => arrivalList(key(p.delta.id), p.events)), now);
  const [after] = await Promise.all([
    (owner.kind === "team" ? deps.teamCounters : deps.counters).add(job, added, new Set(limited.map((p) => p.delta.id))),
    windowDoc && windowDoc.add.size > 0 ? deps.teamWindows.add(job, [windowDoc], now) : undefined,
    userDocs.length > 0 ? deps.windows.add(job, userDocs, now) : undefined,
  ]);
  for (const p of limited) {
    const c = after.get(p.delta.id);
    if (c) await recordCrossings(deps, c, p.delta, p.limit);
  }
  // Credits the old period drew for the moved events follow them (before the list is replaced: a
  // mover cut off before this computes the same job again and the account takes it once): a
  // user's, decided by its period counter's spend, or a team pool's, by its pool counter's.
  let draws: DrawsMoved | null = null;
  if (owner.kind === "user") {
    // The old period drew for the moved events if one of them arrived with credits, or if its plan
    // draws credits (an earlier move brought them in, or they arrived before its plan drew
    // credits): moveDrawn hands over only what it drew beyond its need after the move.
    const drew = moved.find(drawsOwnCredits);
    const allowance = drew?.spend_limit ?? (fromDraws ? fromPlan?.maxSpendPerPeriod : undefined);
    if (allowance != null) draws = { counters: deps.counters, counterId: from, owner: userOwner(owner.id), allowance, into: periods.map((p) => p.delta), credited: true };
  } else if (poolOut) {
    const allowance = leaving.find((e) => e.team!.counter_id === from)?.team!.credits!.allowance ?? fromPlan?.maxSpendPerPeriod;
    if (allowance !== undefined) draws = { counters: deps.teamCounters, counterId: poolOut.id, owner: teamOwner(owner.team.externalTeamId), allowance, into: poolsIn, credited: false };
  }
  if (draws) await moveDraws(deps, productId, job, window, draws);
  if (await deps.arrivals.replace(list._id, list.ids, staying)) {
    deps.logger.info({ productId, [owner.kind]: owner.id, from, events: moved.length }, "events moved to the period of a subscription recorded after they arrived");
  }
  // The move's guards stay in the counters (unlike a usage job's, which go with the next update):
  // a mover that read the list before it changed, on another replica or beside this one,
  // computes this same job later and must find them. A move is rare (a change recorded late),
  // so they are few.
  return true;
}


/** The draws a move takes along: whose account, the counter whose spend decides its need, the old plan's allowance (dollars), and the counters the events went to. */
interface DrawsMoved {
  counters: Pick<CounterStore, "spends">;
  counterId: string;
  owner: string;
  allowance: number;
  into: readonly CounterDelta[];
  /** Whether the counter keeps its credited spend apart (a user's period counter; a pool counter is all the pool's to pay). */
  credited: boolean;
}

/** What the old period drew beyond what its spend needs after the move goes to the periods the events went to (credits/settle.ts moveDrawn). */
async function moveDraws(deps: MoveDeps, productId: string, job: string, window: { start: Date; end: Date }, d: DrawsMoved): Promise<void> {
  await moveDrawn(deps, (ids) => d.counters.spends(ids), {
    productId,
    owner: d.owner,
    job,
    from: { key: String(window.start.getTime()), end: window.end, counterId: d.counterId, credited: d.credited, allowance: toNano(d.allowance) },
    // A user's new periods draw for what their plans draw credits for; a pool pays all it counts.
    to: d.into.map((t) => ({ key: String(t.start.getTime()), end: t.end, cost: t.add.cost, credited: d.credited ? (t.credited ?? 0) : t.add.cost })),
  });
}

/**
 * Where the window counts of a team's moved events go (pure): each event's shares leave where the
 * old period counted them (as stored on arrival there; for one an earlier move brought in, as the
 * old period's plan counts it: `from.team`, null when the plan is unknown) and go where the
 * team's new plan counts them. Team-scope windows that lie within a period are counted in that period's counter
 * (`out` from the old one, `into` by counter id; teams/count.ts, inPeriodWindow), others in the
 * team's window document (`doc`); member-scope ones in each member's window document
 * (`members`, by user). An entry that ended gates nothing: nothing is taken from or added to it.
 */
export function teamWindowMoves(
  from: { counterId: string; start: Date; end: Date; team: TeamAttribution | null },
  groups: readonly { team: TeamAttribution; events: readonly UsageEventDoc[] }[],
  now: Date,
): { out: Map<string, WindowShare>; into: Map<string, Map<string, WindowShare>>; doc: Map<string, WindowShare>; members: Map<string, Map<string, WindowShare>> } {
  const add = (m: Map<string, WindowShare>, s: WindowShare, sign: number) => tally(m, s, sign, now);
  const mapIn = <K,>(m: Map<K, Map<string, WindowShare>>, k: K) => m.get(k) ?? m.set(k, new Map()).get(k)!;
  const out = new Map<string, WindowShare>();
  const into = new Map<string, Map<string, WindowShare>>();
  const doc = new Map<string, WindowShare>();
  const members = new Map<string, Map<string, WindowShare>>();
  for (const g of groups) {
    const prefix = memberPrefix(g.team.team.id);
    for (const e of g.events) {
      const raw = sentModel(e);
      const arrived = e.team!.counter_id === from.counterId;
      const counted = arrived || !from.team ? null : teamShare(from.team, e, raw, now);
      const held = arrived
        ? { team: e.team!.windows ?? [], member: (e.windows ?? []).filter((s) => s.key.startsWith(prefix)) }
        : { team: counted?.team.windows ?? [], member: counted?.member ?? [] };
      // Placed as they were counted: on arrival by the event's own period (teams/count.ts), which
      // may end elsewhere than the window the history now gives that counter.
      const heldIn = arrived ? { start: e.team!.period_start, end: e.team!.period_end } : from;
      const moved = teamShare(g.team, e, raw, now);
      for (const s of held.team) add(inPeriodWindow(s, heldIn.start, heldIn.end) ? out : doc, s, -1);
      for (const s of moved.team.windows ?? []) add(inPeriodWindow(s, g.team.period.start, g.team.period.end) ? mapIn(into, g.team.counterId) : doc, s, 1);
      for (const s of held.member) add(mapIn(members, e.user_id), s, -1);
      for (const s of moved.member ?? []) add(mapIn(members, e.user_id), s, 1);
    }
  }
  dropZeros(out);
  dropZeros(doc);
  for (const byKey of [into, members]) {
    for (const [k, m] of byKey) {
      dropZeros(m);
      if (m.size === 0) byKey.delete(k);
    }
  }
  return { out, into, doc, members };
}

/**
 * The nearest to the model an event was sent with, which is not kept: each stored name is a
 * prefix of it (rules' normalizeModel), the member plan's and the team plan's, so the longer.
 */
function sentModel(e: Pick<UsageEventDoc, "model" | "team">): string | null {
  const names = [e.model, e.team?.model].filter((m): m is string => typeof m === "string");
  return names.length === 0 ? null : names.reduce((a, b) => (b.length > a.length ? b : a));
}

/** An event's model as `plan` names it (as on arrival, usage/record.ts), from the nearest to the name sent; null without one. */
function modelUnder(plan: Pick<PlanInfo, "pricing">, e: Pick<UsageEventDoc, "model" | "team">): string | null {
  const raw = sentModel(e);
  return raw === null ? null : normalizeModel(raw, plan.pricing);
}

/** What of a plan counts an event in its windows: its limits, time zone and model names. */
type CountingPlan = WindowPlan & Pick<PlanInfo, "pricing">;

/**
 * How a user's window document changes when its events move (pure): each moved event leaves the
 * fields its old period counted it in (the shares stored when it arrived there; for one an
 * earlier move brought in, its shares as the old period's plan counts it) and goes to those the
 * new period's plan counts it in. So a `period` window takes the new period's field, and a limit
 * only the new plan has (a late upgrade) counts what moved into its period. An entry that ended
 * gates nothing: nothing is taken from or added to it. Member-scope shares (a team's) stay.
 */
export function userWindowMoves(
  from: { start: Date; end: Date; plan: CountingPlan | null },
  fromCounterId: string,
  groups: readonly { period: BillingPeriod; plan?: CountingPlan | null; events: readonly UsageEventDoc[] }[],
  now: Date,
): Map<string, WindowShare> {
  // A limit on a model meets the event's model as the plan names it.
  const shares = (plan: CountingPlan | null, period: { start: Date; end: Date }, e: UsageEventDoc) =>
    plan ? (windowShares(plan, period, { ...e, model: modelUnder(plan, e) }, now) ?? []) : [];
  const out = new Map<string, WindowShare>();
  const add = (s: WindowShare, sign: number) => tally(out, s, sign, now);
  for (const g of groups) {
    for (const e of g.events) {
      // A user's own keys begin with a metric, a member-scope one with "team:" (teams/shares.ts memberPrefix).
      const held = e.counter_id === fromCounterId ? (e.windows ?? []).filter((s) => !s.key.startsWith("team:")) : shares(from.plan, from, e);
      for (const s of held) add(s, -1);
      for (const s of shares(g.plan ?? null, g.period, e)) add(s, 1);
    }
  }
  dropZeros(out);
  return out;
}

/** Adds a window share, signed, to a document's changes; an entry that ended gates nothing and is left alone. */
function tally(m: Map<string, WindowShare>, s: WindowShare, sign: number, now: Date): void {
  if (s.end <= now.getTime()) return;
  const prev = m.get(s.key);
  m.set(s.key, { key: s.key, end: s.end, n: (prev?.n ?? 0) + sign * s.n });
}

/** Entries whose changes cancel out write nothing. */
function dropZeros(m: Map<string, WindowShare>): void {
  for (const [k, s] of m) if (s.n === 0) m.delete(k);
}
