import { create } from "@bufbuild/protobuf";
import { ThresholdCrossingSchema, type ThresholdCrossing } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { toTimestamp } from "@meter/lib/time";

/** A threshold crossing as ingestion hands it over: spend pct/10 of a 10-dollar limit in the period. */
export function thresholdCrossing(
  c: { id: string; productId: string; userId: string; pct: number; periodStart: Date; periodEnd: Date; crossedAt: Date },
): ThresholdCrossing {
  return create(ThresholdCrossingSchema, {
    id: c.id,
    productId: c.productId,
    userId: c.userId,
    thresholdPct: c.pct,
    currentSpend: c.pct / 10,
    spendLimit: 10,
    planName: "pro",
    tokensTotal: 1n,
    costByModel: { "gpt-4o": c.pct / 10 },
    periodStart: toTimestamp(c.periodStart),
    periodEnd: toTimestamp(c.periodEnd),
    crossedAt: toTimestamp(c.crossedAt),
  });
}
