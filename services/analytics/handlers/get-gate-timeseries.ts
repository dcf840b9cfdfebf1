import type { ServiceImpl } from "@connectrpc/connect";
import type { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { daysOf } from "./params.ts";
import { readWindow } from "../flows/queries.ts";
import { lookback } from "../domain/windows.ts";
import type { AnalyticsDeps } from "../deps.ts";

/** Soft and hard gate events per UTC day of the window, oldest first, zeros included. */
export function getGateTimeseries(deps: AnalyticsDeps): ServiceImpl<typeof AnalyticsService>["getGateTimeseries"] {
  return async (req) => {
    const productId = req.productId;
    const w = lookback(deps.now(), daysOf(req));
    const { docs } = await readWindow(deps, productId, w.days, false);
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
