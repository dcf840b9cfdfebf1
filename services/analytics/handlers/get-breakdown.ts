import type { ServiceImpl } from "@connectrpc/connect";
import type { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { shares, sumByKey } from "../domain/rollup.ts";
import { daysOf, sourceOf } from "./params.ts";
import { readWindow } from "../flows/queries.ts";
import { lookback } from "../domain/windows.ts";
import type { AnalyticsDeps } from "../deps.ts";

/** Cost and tokens per model over the window, with each model's share; highest cost first. */
export function getBreakdown(deps: AnalyticsDeps): ServiceImpl<typeof AnalyticsService>["getBreakdown"] {
  return async (req) => {
    const productId = req.productId;
    const source = sourceOf(req.filter);
    const w = lookback(deps.now(), daysOf(req));
    const { docs } = await readWindow(deps, productId, w.days, false);
    const models = sumByKey(
      docs.flatMap((d) => d.models),
      (m) => m.name,
      (m) => ({ auto: m.auto, manual: m.manual }),
      source,
    );
    return { models: shares(models).map((m) => ({ ...m, tokens: BigInt(m.tokens) })) };
  };
}
