import type { ServiceImpl } from "@connectrpc/connect";
import type { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { requestedDays } from "./params.ts";
import type { AnalyticsDeps } from "../deps.ts";

/** Soft and hard gate events per UTC day of the window, oldest first, zeros included. */
export function getGateTimeseries(deps: AnalyticsDeps): ServiceImpl<typeof AnalyticsService>["getGateTimeseries"] {
  return async (req) => {
    const { w, docs } = await requestedDays(deps, req);
    const byDay = new Map(docs.map((d) => [d.day, d]));
    return {
      data: w.days.map((date) => ({
        date,
        softGates: BigInt(byDay.get(date)?.soft_gates ?? 0),
        hardGates: BigInt(byDay.get(date)?.hard_gates ?? 0),
      })),
    };
  };
}
