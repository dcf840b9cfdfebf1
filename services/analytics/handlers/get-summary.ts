import type { ServiceImpl } from "@connectrpc/connect";
import type { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { toTimestamp } from "@meter/lib/time";
import { requestScope, daysOf, sourceOf } from "./params.ts";
import { readWindow, totalsOf } from "../flows/queries.ts";
import { lookback, previous } from "../domain/windows.ts";
import type { AnalyticsDeps } from "../deps.ts";

/** Totals of the last `days` UTC days (today included) beside those of the `days` before. */
export function getSummary(deps: AnalyticsDeps): ServiceImpl<typeof AnalyticsService>["getSummary"] {
  return async (req) => {
    const scope = requestScope(req);
    const source = sourceOf(req.filter);
    const current = lookback(deps.now(), daysOf(req));
    const before = previous(current);
    const [cur, prev] = await Promise.all([
      readWindow(deps, scope, current.days, true, source),
      readWindow(deps, scope, before.days, true, source),
    ]);
    return {
      current: totalsOf(cur.docs, cur.users, source),
      periodStart: toTimestamp(current.start),
      periodEnd: toTimestamp(current.end),
      previousPeriod: totalsOf(prev.docs, prev.users, source),
    };
  };
}
