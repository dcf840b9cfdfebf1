import type { ServiceImpl } from "@connectrpc/connect";
import type { ThresholdCrossing, WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { rpcError } from "@meter/lib/errors";
import { fromTimestamp } from "@meter/lib/time";
import type { WebhooksDeps } from "../deps.ts";
import { THRESHOLDS } from "../domain/events.ts";
import { publishNotices } from "./common.ts";

/**
 * One usage.threshold.<pct> event per (product, user, billing period, threshold): the event
 * key is built from those, not from the crossing id, so a crossing handed over twice (or
 * under two ids) emits once. Without a period start the crossing id stands in for the period.
 */
export function thresholdKey(c: ThresholdCrossing): string {
  const period = fromTimestamp(c.periodStart)?.toISOString() ?? `crossing:${c.id}`;
  return `threshold:${c.userId}:${period}:${c.thresholdPct}`;
}

function validate(c: ThresholdCrossing): void {
  if (!c.productId) throw rpcError.invalid("crossing product_id is required");
  if (!c.userId) throw rpcError.invalid("crossing user_id is required");
  if (!c.id) throw rpcError.invalid("crossing id is required");
  if (!(THRESHOLDS as readonly number[]).includes(c.thresholdPct)) {
    throw rpcError.invalid(`threshold_pct must be one of ${THRESHOLDS.join(", ")}`);
  }
}

function crossingEvent(c: ThresholdCrossing) {
  return {
    type: `usage.threshold.${c.thresholdPct}`,
    key: thresholdKey(c),
    data: {
      user_id: c.userId,
      threshold_pct: c.thresholdPct,
      current_spend: c.currentSpend,
      spend_limit: c.spendLimit,
      plan_name: c.planName,
      tokens_total: Number(c.tokensTotal),
      cost_by_model: { ...c.costByModel },
    },
  };
}

export function publishThresholdCrossings(deps: WebhooksDeps): ServiceImpl<typeof WebhooksService>["publishThresholdCrossings"] {
  return async (req) => {
    await publishNotices(deps, req.crossings, validate, crossingEvent);
    return {};
  };
}
