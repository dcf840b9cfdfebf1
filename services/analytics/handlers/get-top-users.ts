import type { ServiceImpl } from "@connectrpc/connect";
import type { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { requestScope, daysOf, limitOf, sourceOf } from "./params.ts";
import { readWindow, topUsersOf } from "../flows/queries.ts";
import { lookback } from "../domain/windows.ts";
import type { AnalyticsDeps } from "../deps.ts";

/** The users with the highest cost over the window (ties by user id). */
export function getTopUsers(deps: AnalyticsDeps): ServiceImpl<typeof AnalyticsService>["getTopUsers"] {
  return async (req) => {
    const scope = requestScope(req);
    const source = sourceOf(req.filter);
    const limit = limitOf(req.limit);
    const w = lookback(deps.now(), daysOf(req));
    const { users } = await readWindow(deps, scope, w.days, true, source);
    return { users: topUsersOf(users, limit) };
  };
}
