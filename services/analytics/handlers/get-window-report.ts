import type { ServiceImpl } from "@connectrpc/connect";
import type { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { rpcError } from "@meter/lib/errors";
import { fromTimestamp } from "@meter/lib/time";
import { limitOf } from "./params.ts";
import { readWindow, topUsersOf, totalsOf } from "../flows/queries.ts";
import { coveringDays, REPORT_MAX_DAYS } from "../domain/windows.ts";
import type { AnalyticsDeps } from "../deps.ts";

/**
 * Product-wide figures for an explicit window (the webhooks service's daily, weekly and
 * monthly summaries). The window is widened to whole UTC days; both sources are counted.
 */
export function getWindowReport(deps: AnalyticsDeps): ServiceImpl<typeof AnalyticsService>["getWindowReport"] {
  return async (req) => {
    const productId = req.productId;
    const start = fromTimestamp(req.start);
    const end = fromTimestamp(req.end);
    if (!start || !end) throw rpcError.invalid("start and end are required");
    if (end <= start) throw rpcError.invalid("end must be after start");
    const limit = limitOf(req.topUsersLimit, "top_users_limit");
    const w = coveringDays(start, end);
    if (w.days.length > REPORT_MAX_DAYS) throw rpcError.invalid(`the window may span at most ${REPORT_MAX_DAYS} days`);
    const { docs, users } = await readWindow(deps, productId, w.days, true);
    return {
      totals: totalsOf(docs, users, undefined),
      softGates: BigInt(docs.reduce((a, d) => a + d.soft_gates, 0)),
      hardGates: BigInt(docs.reduce((a, d) => a + d.hard_gates, 0)),
      topUsers: topUsersOf(users, limit),
    };
  };
}
