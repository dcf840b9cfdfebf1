import type { KnownUser, PlanInfo } from "./adapters/plans.ts";
import type { IngestionDeps } from "./deps.ts";
import { calendarMonth, periodAt, type BillingPeriod } from "./domain/period.ts";
import { reachedThresholds } from "./domain/thresholds.ts";
import { kickRelay } from "./jobs/relay.ts";
import { crossingsClosedBefore } from "./retention.ts";
import { counterId, monthCounterId, type Countable, type CounterDoc } from "./store/counters.ts";
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
  return { period, plan, counterId: counterId(productId, userId, period.start, period.end) };
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

/**
 * Records each threshold the counter's spend has reached and that is not recorded yet. The
 * outbox entry is written before the crossing itself, so a recorded crossing always has
 * been queued for the webhooks service.
 */
export async function recordCrossings(deps: IngestionDeps, counter: CounterDoc): Promise<void> {
  // Crossings of a period ended this long ago may have been deleted by retention: announcing
  // them again would fire a threshold twice, so a late event there announces nothing.
  if (counter.period_end < crossingsClosedBefore(deps.now(), deps.retention)) return;
  for (const pct of reachedThresholds(counter.cost, counter.spend_limit ?? undefined)) {
    const key = crossingKey(counter.counter_id, pct);
    if (await deps.crossings.exists(key._id)) continue;
    const doc: CrossingDoc = {
      ...key,
      product_id: counter.product_id,
      user_id: counter.user_id,
      threshold_pct: pct,
      current_spend: counter.cost,
      spend_limit: counter.spend_limit!,
      plan_name: counter.plan_name ?? "",
      tokens_total: counter.tokens,
      cost_by_model: counter.cost_by_model,
      period_start: counter.period_start,
      period_end: counter.period_end,
      crossed_at: deps.now(),
    };
    await deps.outbox.put(deps.outbox.webhooks, [entry("threshold", key._id, [{ ...doc }])]);
    if ((await deps.crossings.record([doc])) > 0) {
      deps.logger.info({ user: counter.user_id, pct, counter: counter.counter_id }, "spend threshold crossed");
    }
  }
}

/** Everything derived from the usage events a job inserted: outbox entries, counters, thresholds. */
async function completeUsage(deps: IngestionDeps, jobId: string, inserted: UsageEventDoc[]): Promise<void> {
  await deps.outbox.put(deps.outbox.analytics, [entry("usage", jobId, inserted.map(usageFact))]);
  const groups = new Map<string, Countable[]>();
  const add = (id: string, c: Countable) => {
    const list = groups.get(id);
    if (list) list.push(c);
    else groups.set(id, [c]);
  };
  for (const d of inserted) {
    add(d.counter_id, d);
    // The month's counter has no plan and no limit: it only answers usage by calendar month.
    const month = calendarMonth(d.timestamp);
    add(monthCounterId(d.product_id, d.user_id, month.start), {
      ...d,
      period_start: month.start,
      period_end: month.end,
      plan_name: null,
      spend_limit: null,
    });
  }
  const counters = await deps.ledger.addAll(jobId, groups);
  await Promise.all([...counters.values()].map((after) => (after ? recordCrossings(deps, after) : undefined)));
}

async function completeGates(deps: IngestionDeps, jobId: string, inserted: GateEventDoc[]): Promise<void> {
  await deps.outbox.put(deps.outbox.analytics, [entry("gate", jobId, inserted.map(gateFact))]);
  await deps.outbox.put(deps.outbox.webhooks, [entry("gate", jobId, inserted.map(({ job: _, ...d }) => d))]);
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

/** Completes a job left unfinished (its request crashed or is slow): idempotent throughout. */
export function recoverJob(deps: IngestionDeps, job: JobDoc): Promise<void> {
  let running = deps.recovering.get(job._id);
  if (!running) {
    running = completeJob(deps, job).finally(() => deps.recovering.delete(job._id));
    deps.recovering.set(job._id, running);
  }
  return running;
}

async function completeJob(deps: IngestionDeps, job: JobDoc): Promise<void> {
  if (job.kind === "usage") {
    await completeUsage(deps, job._id, await deps.events.ofJob(job._id));
  } else {
    await completeGates(deps, job._id, await deps.gates.ofJob(job._id));
  }
  await deps.jobs.close(job._id);
}

/**
 * Offered events that were already stored belong to an earlier job. If that job is still
 * open past the recovery age (its request died), it is completed now, so that a client
 * retrying after a crash sees exact totals at once.
 */
async function adoptStale(deps: IngestionDeps, own: JobDoc, duplicateIds: string[]): Promise<void> {
  if (duplicateIds.length === 0) return;
  const wanted = new Set(duplicateIds);
  const stale = await takeable(deps, 1_000);
  for (const job of stale) {
    if (job._id !== own._id && job.kind === own.kind && job.ids.some((id) => wanted.has(id))) await recoverJob(deps, job);
  }
}

/**
 * The write path of a request. The job is written first and closed last; the documents
 * carry its id, so whoever completes the job (this request, a retry or the sweep) derives
 * work from exactly the documents this job inserted.
 */
async function storeJob<D extends { _id: string }>(
  deps: IngestionDeps,
  job: JobDoc,
  docs: D[],
  insert: (docs: D[]) => Promise<Set<string>>,
  complete: (inserted: D[]) => Promise<void>,
): Promise<Set<string>> {
  await deps.jobs.open(job);
  const inserted = await insert(docs);
  await deps.jobs.markInserted(job._id);
  await complete(docs.filter((d) => inserted.has(d._id)));
  await adoptStale(deps, job, docs.filter((d) => !inserted.has(d._id)).map((d) => d._id));
  await deps.jobs.close(job._id);
  // New outbox entries: hand them over now rather than at the next repeating round.
  if (inserted.size > 0) await kickRelay(deps);
  return inserted;
}

/** Stores usage events exactly once and counts them exactly once (the ledger refuses a job's second addition). */
export function storeUsage(deps: IngestionDeps, job: JobDoc, docs: UsageEventDoc[]): Promise<Set<string>> {
  return storeJob(deps, job, docs, (d) => deps.events.insertNew(d), (ins) => completeUsage(deps, job._id, ins));
}

/** Stores gate events exactly once and queues each new one for webhooks and analytics. */
export function storeGates(deps: IngestionDeps, job: JobDoc, docs: GateEventDoc[]): Promise<Set<string>> {
  return storeJob(deps, job, docs, (d) => deps.gates.insertNew(d), (ins) => completeGates(deps, job._id, ins));
}

/**
 * Jobs another request may complete. A job whose insert has returned is taken after the
 * recovery age. One without that mark may still have its insert running in the database
 * (a request cut off mid-insert leaves the server finishing it), and completing it early
 * would fix its set of events too soon; it is taken only after ten times the recovery age.
 */
async function takeable(deps: IngestionDeps, limit: number): Promise<JobDoc[]> {
  const now = deps.now().getTime();
  const old = await deps.jobs.olderThan(new Date(now - deps.recoveryAfterMs), limit);
  return old.filter((j) => j.inserted || j.created_at.getTime() < now - 10 * deps.recoveryAfterMs);
}

/** The recovery sweep of the background loop. */
export async function recoverStale(deps: IngestionDeps): Promise<number> {
  const stale = await takeable(deps, 100);
  for (const job of stale) await recoverJob(deps, job);
  if (stale.length > 0) deps.logger.warn({ jobs: stale.length }, "completed jobs left unfinished by interrupted requests");
  return stale.length;
}
