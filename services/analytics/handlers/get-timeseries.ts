import type { ServiceImpl } from "@connectrpc/connect";
import type { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { pick } from "../domain/rollup.ts";
import { requestedDays, sourceOf } from "./params.ts";
import type { AnalyticsDeps } from "../deps.ts";

/** One point per UTC day of the window, oldest first, days without events as zeros. */
export function getTimeseries(deps: AnalyticsDeps): ServiceImpl<typeof AnalyticsService>["getTimeseries"] {
  return async (req) => {
    const source = sourceOf(req.filter);
    const { w, docs } = await requestedDays(deps, req);
    const byDay = new Map(docs.map((d) => [d.day, pick(d.usage, source)]));
    return {
      data: w.days.map((date) => {
        const f = byDay.get(date);
        return { date, cost: f?.[0] ?? 0, tokens: BigInt(f?.[1] ?? 0), events: BigInt(f?.[2] ?? 0) };
      }),
    };
  };
}
