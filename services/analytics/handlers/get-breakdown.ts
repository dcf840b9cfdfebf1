import type { ServiceImpl } from "@connectrpc/connect";
import type { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { shares, sumByKey } from "../domain/rollup.ts";
import { requestedDays, sourceOf } from "./params.ts";
import type { AnalyticsDeps } from "../deps.ts";

/** Cost and tokens per model over the window, with each model's share; highest cost first. */
export function getBreakdown(deps: AnalyticsDeps): ServiceImpl<typeof AnalyticsService>["getBreakdown"] {
  return async (req) => {
    const source = sourceOf(req.filter);
    const { docs } = await requestedDays(deps, req);
    const models = sumByKey(
      docs.flatMap((d) => d.models),
      (m) => m.name,
      (m) => ({ auto: m.auto, manual: m.manual }),
      source,
    );
    return { models: shares(models).map((m) => ({ ...m, tokens: BigInt(m.tokens) })) };
  };
}
