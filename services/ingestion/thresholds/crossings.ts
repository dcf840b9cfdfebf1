import type { Logger } from "@meter/lib/logger";
import { reachedThresholds, toDollars } from "@meter/rules";
import { crossingsClosedBefore, type RetentionPolicy } from "../domain/retention-policy.ts";
import { dollarsByModel, type CounterAfter } from "../store/counters.ts";
import type { CounterDelta } from "../domain/counter-delta.ts";
import { entry, type OutboxStore } from "../store/outbox.ts";
import type { UsageEventDoc } from "../store/usage-events.ts";
import { crossingKey, type CrossingDoc, type CrossingStore } from "./store.ts";

/** What recording crossings needs. */
export interface CrossingDeps {
  crossings: Pick<CrossingStore, "exists" | "record">;
  outbox: Pick<OutboxStore, "put" | "webhooks">;
  retention: RetentionPolicy;
  logger: Logger;
  now(): Date;
}

/** Where a counter's plan limit comes from: the attribution its events carry. */
export type Limited = Pick<UsageEventDoc, "plan_name" | "spend_limit">;

/**
 * Records each threshold the counter's spend has reached and that is not recorded yet. The
 * outbox entry is written before the crossing itself, so a recorded crossing always has
 * been queued for the webhooks service. A crossing is keyed by the whole period (start and
 * end): a renewal with other dates is another period.
 */
export async function recordCrossings(deps: CrossingDeps, counter: CounterAfter, d: CounterDelta, limit: Limited): Promise<void> {
  // Crossings of a period ended this long ago may have been deleted by retention: announcing
  // them again would fire a threshold twice, so a late event there announces nothing.
  if (d.end < crossingsClosedBefore(deps.now(), deps.retention)) return;
  const spend = toDollars(counter.cost);
  for (const pct of reachedThresholds(spend, limit.spend_limit ?? undefined)) {
    const key = crossingKey(periodKey(d), pct);
    if (await deps.crossings.exists(key._id)) continue;
    const doc: CrossingDoc = {
      ...key,
      product_id: d.productId,
      user_id: d.userId,
      threshold_pct: pct,
      current_spend: spend,
      spend_limit: limit.spend_limit!,
      plan_name: limit.plan_name ?? "",
      tokens_total: counter.tokens,
      cost_by_model: dollarsByModel(counter.cost_by_model),
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
