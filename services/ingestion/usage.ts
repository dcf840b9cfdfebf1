import { rpcError } from "@meter/lib/errors";
import type { KnownUser, PlanInfo } from "./adapters/plans.ts";
import type { IngestionDeps } from "./deps.ts";
import { encodeKey } from "./domain/field-keys.ts";
import { calendarMonth, hasThresholds, periodAt, reachedThresholds, type BillingPeriod } from "@meter/rules";
import { kickRelay } from "./jobs/relay.ts";
import { crossingsClosedBefore } from "./retention.ts";
import { counterId, monthCounterId, sum, type CounterDelta, type CounterDoc, type LeaseSpend } from "./store/counters.ts";
import { crossingKey, type CrossingDoc } from "./store/crossings.ts";
import type { GateEventDoc } from "./store/gate-events.ts";
import type { JobDoc } from "./store/jobs.ts";
import { entry } from "./store/outbox.ts";
import type { UsageEventDoc } from "./store/usage-events.ts";

/** Where usage at time `t` of a user goes: its billing period, plan and counter. */
export interface Attribution {
  period: BillingPeriod;
  plan: PlanInfo | null;
  counterId: string;
}

export function attribute(productId: string, userId: string, user: KnownUser | undefined, t: Date): Attribution {
  const period = periodAt(user?.subscriptions ?? [], t);
  const plan = (period.subscription && user?.plans.get(period.subscription.planId)) || null;
  return { period, plan, counterId: counterId(productId, userId, period.start) };
}

/** The attribution fields every stored usage event carries. */
export function attributionFields(a: Attribution) {
  return {
    counter_id: a.counterId,
    period_start: a.period.start,
    period_end: a.period.end,
    plan_name: a.plan?.name ?? null,
    spend_limit: a.plan?.maxSpendPerPeriod ?? null,
  };
}

/** Most events of one job in one counter kept findable by a late change (more: a backfill). */
const MAX_LISTED = 1_000;

/** A counter's events as a late change finds them (late-changes.ts). */
export function arrivalList(counterId: string, events: readonly UsageEventDoc[]) {
  let latest = 0;
  for (const e of events) latest = Math.max(latest, e.timestamp.getTime());
  return { counterId, ids: events.map((e) => e._id.slice(e.product_id.length + 1)), latest };
}

/** Where a counter's plan limit comes from: the attribution its events carry. */
type Limited = Pick<UsageEventDoc, "plan_name" | "spend_limit">;

/**
 * Records each threshold the counter's spend has reached and that is not recorded yet. The
 * outbox entry is written before the crossing itself, so a recorded crossing always has
 * been queued for the webhooks service. A crossing is keyed by the whole period (start and
 * end): a renewal with other dates is another period.
 */
export async function recordCrossings(deps: IngestionDeps, counter: CounterDoc, d: CounterDelta, limit: Limited): Promise<void> {
  // Crossings of a period ended this long ago may have been deleted by retention: announcing
  // them again would fire a threshold twice, so a late event there announces nothing.
  if (d.end < crossingsClosedBefore(deps.now(), deps.retention)) return;
  for (const pct of reachedThresholds(counter.cost, limit.spend_limit ?? undefined)) {
    const key = crossingKey(periodKey(d), pct);
    if (await deps.crossings.exists(key._id)) continue;
    const doc: CrossingDoc = {
      ...key,
      product_id: d.productId,
      user_id: d.userId,
      threshold_pct: pct,
      current_spend: counter.cost,
      spend_limit: limit.spend_limit!,
      plan_name: limit.plan_name ?? "",
      tokens_total: counter.tokens,
      cost_by_model: counter.cost_by_model ?? {},
      period_start: d.start,
      period_end: d.end,
      crossed_at: deps.now(),
    };
    await deps.outbox.put(deps.outbox.webhooks, [entry("threshold", key._id, [{ ...doc }])]);
    if ((await deps.crossings.record([doc])) > 0) {
      deps.logger.info({ user: d.userId, pct, counter: d.id }, "spend threshold crossed");
    }
  }
}

/** "<product>|<start>|<end>|<user>": what a threshold fires once for. */
function periodKey(d: CounterDelta): string {
  return `${d.productId}|${d.start.toISOString()}|${d.end.toISOString()}|${d.userId}`;
}

/**
 * What the events spent from each budget lease of the counter, and whether some were spent
 * from none. An event naming a lease the counter does not hold (granted for another period,
 * or never) counts as spent from none: it lowers what remains, so it must bump the version.
 */
async function leaseSpend(deps: IngestionDeps, counterId: string, events: readonly UsageEventDoc[]): Promise<Pick<CounterDelta, "leases" | "unleased">> {
  const named = new Set(events.flatMap((e) => (e.lease_id ? [e.lease_id] : [])));
  const held = named.size === 0 ? new Set<string>() : await deps.leases.store.held(counterId, [...named]);
  // Maps, not plain objects: lease ids and model names are the caller's ("__proto__" is a valid id).
  const leases = new Map<string, { cost: number; tokens: Map<string, number> }>();
  let unleased = false;
  for (const e of events) {
    if (!e.lease_id || !held.has(e.lease_id)) {
      unleased = true;
      continue;
    }
    let l = leases.get(e.lease_id);
    if (!l) leases.set(e.lease_id, (l = { cost: 0, tokens: new Map() }));
    l.cost += e.cost_total;
    if (e.model !== null) {
      const key = encodeKey(e.model);
      l.tokens.set(key, (l.tokens.get(key) ?? 0) + e.total_tokens);
    }
  }
  const spends = [...leases].map(([id, l]): [string, LeaseSpend] => [id, { cost: l.cost, tokens: Object.fromEntries(l.tokens) }]);
  return { leases: Object.fromEntries(spends), unleased };
}

function groupBy<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
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
 * period counter carries it as its month share (CounterDoc.month).
 */
function deltas(inserted: readonly UsageEventDoc[]): {
  periods: { delta: CounterDelta; limit: Limited; events: UsageEventDoc[] }[];
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
    return { delta, limit: first as Limited, events: list };
  });
  // The month's counter has no plan and no limit: it only answers usage by calendar month.
  const rest = inserted.filter((e) => monthOf.get(e)!.start.getTime() !== e.period_start.getTime());
  const months = [...groupBy(rest, (d) => monthCounterId(d.product_id, d.user_id, monthOf.get(d)!.start))].map(([id, list]) => {
    const month = monthOf.get(list[0]!)!;
    return { id, productId: list[0]!.product_id, userId: list[0]!.user_id, ...month, add: sum(list) };
  });
  return { periods, months };
}

/**
 * Everything derived from the usage events a job inserted: the analytics outbox entry, the
 * counters (once, guarded by the job id), then thresholds from the limited period counters
 * as that same update left them. Each step is idempotent, so a completion cut off anywhere can
 * be repeated by whoever claims the job next; the guard entries go once the job is closed.
 */
async function completeUsage(deps: IngestionDeps, job: JobDoc, inserted: UsageEventDoc[]): Promise<string[]> {
  await deps.outbox.put(deps.outbox.analytics, [entry("usage", job._id, inserted.map(usageFact))]);
  const { periods, months } = deltas(inserted);
  // Before the counters: an event counted in a period is always findable by a late change.
  await deps.arrivals.record(job.product_id, job._id, periods.filter((p) => p.events.length <= MAX_LISTED).map((p) => arrivalList(p.delta.id, p.events)), deps.now());
  await Promise.all(
    periods.map(async (p) => Object.assign(p.delta, await leaseSpend(deps, p.delta.id, p.events))),
  );
  const limited = periods.filter((p) => hasThresholds(p.limit.spend_limit));
  const after = await deps.counters.add(job._id, [...periods.map((p) => p.delta), ...months], new Set(limited.map((p) => p.delta.id)));
  await Promise.all(
    limited.map(async (p) => {
      const counter = after.get(p.delta.id);
      if (counter) await recordCrossings(deps, counter, p.delta, p.limit);
    }),
  );
  return [...periods.map((p) => p.delta.id), ...months.map((m) => m.id)];
}

async function completeGates(deps: IngestionDeps, jobId: string, inserted: GateEventDoc[]): Promise<void> {
  await deps.outbox.put(deps.outbox.analytics, [entry("gate", jobId, inserted.map(gateFact))]);
  await deps.outbox.put(deps.outbox.webhooks, [entry("gate", jobId, inserted.map(({ job: _, ...d }) => d))]);
  await deps.gates.file(inserted);
}

/** What analytics needs of a usage event (the outbox keeps only this). */
function usageFact(d: UsageEventDoc) {
  const { product_id, event_id, user_id, timestamp, model, total_tokens, cost_total, source, tool_call_count } = d;
  return { product_id, event_id, user_id, timestamp, model, total_tokens, cost_total, source, tool_call_count };
}

function gateFact(d: GateEventDoc) {
  const { product_id, event_id, user_id, timestamp, status, blocked } = d;
  return { product_id, event_id, user_id, timestamp, status, blocked };
}

/** Completes a claimed job; `inserted` when the caller knows them (its own insert), else read by id. */
async function completeJob(deps: IngestionDeps, job: JobDoc, inserted?: UsageEventDoc[] | GateEventDoc[]): Promise<void> {
  let counters: string[] = [];
  if (job.kind === "usage") {
    counters = await completeUsage(deps, job, (inserted as UsageEventDoc[] | undefined) ?? (await deps.events.ofJob(job)));
  } else {
    await completeGates(deps, job._id, (inserted as GateEventDoc[] | undefined) ?? (await deps.gates.ofJob(job)));
  }
  await deps.jobs.close(job._id);
  deps.counters.released(job._id, counters);
}

/** Completes a job claimed from another request (crashed or slow); shared within the process. */
function completeTaken(deps: IngestionDeps, job: JobDoc): Promise<void> {
  let running = deps.recovering.get(job._id);
  if (!running) {
    running = completeJob(deps, job).finally(() => deps.recovering.delete(job._id));
    deps.recovering.set(job._id, running);
  }
  return running;
}

/** Claims a job held by nobody, or by a claimant silent for the recovery age. */
function claimTaken(deps: IngestionDeps, job: JobDoc): Promise<JobDoc | null> {
  const now = deps.now();
  return deps.jobs.claim(job, now, new Date(now.getTime() - deps.recoveryAfterMs));
}

/** Waits (by primary-key reads) until another claimant closes the job, at most the recovery age. */
async function awaitClosed(deps: IngestionDeps, id: string): Promise<void> {
  const until = Date.now() + deps.recoveryAfterMs;
  for (let pause = 5; Date.now() < until; pause = Math.min(200, pause * 2)) {
    if (!(await deps.jobs.isOpen(id))) return;
    await new Promise((r) => setTimeout(r, pause));
  }
}

/**
 * Offered events that were already stored belong to earlier jobs, which this request
 * completes now if their request may be gone, so that a client retrying after a crash sees
 * exact totals when the retry returns:
 * - a job whose offered ids are all in this request: this request's insert has returned,
 *   so every one of them is stored and the job can insert nothing more; its set of events
 *   is final and it may be completed at once (unless its own request holds the claim:
 *   then this request waits until it closes it);
 * - any other overlapping job once it is takeable by age (see takeable).
 */
async function adoptOverlapping(deps: IngestionDeps, own: JobDoc, offered: Set<string>, duplicateIds: string[]): Promise<void> {
  if (duplicateIds.length === 0) return;
  const wanted = new Set(duplicateIds);
  const now = deps.now().getTime();
  const jobs = await deps.jobs.ofProduct(own.product_id, own.kind);
  for (const job of jobs) {
    if (job._id === own._id || !job.ids.some((id) => wanted.has(id))) continue;
    const covered = job.ids.every((id) => offered.has(id));
    if (!covered && !isTakeable(deps, job, now)) continue;
    const claimed = await claimTaken(deps, job);
    if (claimed) await completeTaken(deps, claimed);
    else if (covered) await awaitClosed(deps, job._id);
  }
}

/**
 * The write path of a request. The job is written first and closed last; the documents
 * carry its id, so whoever completes the job (this request, a retry or the sweep) derives
 * work from exactly the documents this job inserted. Once its insert returned, the request
 * claims its job; if a retry claimed it first, the request waits for that retry to close it.
 */
async function storeJob<D extends { _id: string }>(
  deps: IngestionDeps,
  job: JobDoc,
  docs: D[],
  insert: (docs: D[]) => Promise<Set<string>>,
): Promise<Set<string>> {
  await deps.jobs.open(job);
  const inserted = await insert(docs);
  const claimed = await deps.jobs.claim(job, deps.now(), new Date(0));
  if (claimed) await completeJob(deps, claimed, docs.filter((d) => inserted.has(d._id)) as never);
  else await awaitClosed(deps, job._id);
  const offered = new Set(docs.map((d) => d._id));
  await adoptOverlapping(deps, job, offered, docs.filter((d) => !inserted.has(d._id)).map((d) => d._id));
  // New outbox entries: hand them over now rather than at the next repeating round.
  if (inserted.size > 0) await kickRelay(deps);
  return inserted;
}

/** Stores usage events exactly once and counts them exactly once (the counters' job guard). */
export function storeUsage(deps: IngestionDeps, job: JobDoc, docs: UsageEventDoc[]): Promise<Set<string>> {
  requireFiniteFigures(docs);
  return storeJob(deps, job, docs, (d) => deps.events.insertNew(d));
}

/**
 * Every figure of an event that is counted or handed on must be a finite number >= 0: one
 * NaN would poison a counter for good and fail every handover of its outbox entry. Inputs
 * are checked field by field before; this catches what arithmetic made of them (a price
 * times a token count that overflows, a sum of two huge costs).
 */
export function requireFiniteFigures(docs: readonly UsageEventDoc[]): void {
  for (const d of docs) {
    const figures = { input_tokens: d.input_tokens, output_tokens: d.output_tokens, total_tokens: d.total_tokens, cost_tokens: d.cost_tokens, cost_tools: d.cost_tools, cost_total: d.cost_total };
    for (const [field, v] of Object.entries(figures)) {
      if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
        throw rpcError.invalid(`event ${d.event_id}: ${field} comes to ${String(v)}, not a finite number >= 0; check its figures and the plan's prices`);
      }
    }
  }
}

/** Stores gate events exactly once and queues each new one for webhooks and analytics. */
export function storeGates(deps: IngestionDeps, job: JobDoc, docs: GateEventDoc[]): Promise<Set<string>> {
  return storeJob(deps, job, docs, (d) => deps.gates.insertNew(d));
}

/**
 * Jobs another request may complete without covering them. A claimed job (its insert had
 * returned) is taken once its claim is older than the recovery age. An unclaimed one may
 * still have its insert running in the database (a request cut off mid-insert leaves the
 * server finishing it), and completing it early would fix its set of events too soon; it is
 * taken only after ten times the recovery age.
 */
function isTakeable(deps: IngestionDeps, job: JobDoc, now: number): boolean {
  return job.claimed_at
    ? job.claimed_at.getTime() < now - deps.recoveryAfterMs
    : job.created_at.getTime() < now - 10 * deps.recoveryAfterMs;
}

/** The recovery sweep of the background loop. */
export async function recoverStale(deps: IngestionDeps): Promise<number> {
  const now = deps.now().getTime();
  const old = await deps.jobs.olderThan(new Date(now - deps.recoveryAfterMs), 100);
  let done = 0;
  for (const job of old.filter((j) => isTakeable(deps, j, now))) {
    const claimed = await claimTaken(deps, job);
    if (!claimed) continue;
    await completeTaken(deps, claimed);
    done++;
  }
  if (done > 0) deps.logger.warn({ jobs: done }, "completed jobs left unfinished by interrupted requests");
  return done;
}
