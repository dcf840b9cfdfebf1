import type { KnownUser, PlanInfo } from "./adapters/plans.ts";
import type { IngestionDeps } from "./deps.ts";
import { decodeKeys } from "./domain/field-keys.ts";
import { periodAt, type BillingPeriod } from "./domain/period.ts";
import { reachedThresholds } from "./domain/thresholds.ts";
import { counterId, type CounterDoc } from "./store/counters.ts";
import { crossingKey, type CrossingDoc } from "./store/crossings.ts";
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

/** The attribution fields every stored usage event carries (used again by recovery). */
export function attributionFields(a: Attribution) {
  return {
    counter_id: a.counterId,
    period_start: a.period.start,
    period_end: a.period.end,
    plan_name: a.plan?.name ?? null,
    spend_limit: a.plan?.maxSpendPerPeriod ?? null,
  };
}

/** Records every threshold the counter's spend has reached; existing crossings are kept. */
export async function recordCrossings(deps: IngestionDeps, counter: CounterDoc): Promise<void> {
  const reached = reachedThresholds(counter.cost, counter.spend_limit ?? undefined);
  if (reached.length === 0) return;
  const now = deps.now();
  const docs: CrossingDoc[] = reached.map((pct) => ({
    ...crossingKey(counter._id, pct),
    product_id: counter.product_id,
    user_id: counter.user_id,
    threshold_pct: pct,
    current_spend: counter.cost,
    spend_limit: counter.spend_limit!,
    plan_name: counter.plan_name ?? "",
    tokens_total: counter.tokens,
    cost_by_model: decodeKeys(counter.cost_by_model),
    period_start: counter.period_start,
    period_end: counter.period_end,
    crossed_at: now,
    to_webhooks: true,
  }));
  const fresh = await deps.crossings.record(docs);
  if (fresh > 0) deps.logger.info({ user: counter.user_id, reached, counter: counter._id }, "spend thresholds crossed");
}

/**
 * Adds stored events to their counters. `docs` were just offered for insertion; those that
 * already existed may be leftovers of an interrupted attempt, so their stored counter is
 * looked up and they are completed too.
 */
export async function countEvents(deps: IngestionDeps, docs: UsageEventDoc[], inserted: Set<string>): Promise<void> {
  const groups = new Map<string, string[]>();
  const add = (counter: string, id: string) => {
    const list = groups.get(counter) ?? [];
    list.push(id);
    groups.set(counter, list);
  };
  const existing: string[] = [];
  for (const d of docs) {
    if (inserted.has(d._id)) add(d.counter_id, d._id);
    else existing.push(d._id);
  }
  if (existing.length > 0) {
    const stored = await deps.events.events
      .find({ _id: { $in: existing }, uncounted: true }, { projection: { counter_id: 1 } })
      .toArray();
    for (const s of stored) add(s.counter_id, s._id);
  }
  await Promise.all(
    [...groups].map(([counter, ids]) => deps.ledger.count(counter, ids, (c) => recordCrossings(deps, c))),
  );
}

/** Completes events an interrupted request left uncounted (run by the background loop). */
export async function recoverStranded(deps: IngestionDeps, olderThanMs: number): Promise<number> {
  const stranded = await deps.ledger.stranded(new Date(deps.now().getTime() - olderThanMs), 5_000);
  let n = 0;
  for (const [counter, ids] of stranded) {
    await deps.ledger.count(counter, ids, (c) => recordCrossings(deps, c));
    n += ids.length;
  }
  if (n > 0) deps.logger.warn({ events: n }, "counted events left over by an interrupted request");
  return n;
}
