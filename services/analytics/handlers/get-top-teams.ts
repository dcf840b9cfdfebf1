import type { ServiceImpl } from "@connectrpc/connect";
import type { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { daysOf, limitOf, sourceOf, teamOf } from "./params.ts";
import { readWindow, topUsersOf, totalsOf } from "../flows/queries.ts";
import { lookback } from "../domain/windows.ts";
import { teamScope, teamsScope } from "../domain/scopes.ts";
import type { AnalyticsDeps } from "../deps.ts";

/**
 * The teams with the highest cost over the window (ties by team id), from the team each event
 * was attributed to when counted: the rows of the teams' scope, folded as top users folds
 * users. With a team filter, that team alone (absent when it had no usage in the window).
 */
export function getTopTeams(deps: AnalyticsDeps): ServiceImpl<typeof AnalyticsService>["getTopTeams"] {
  return async (req) => {
    const source = sourceOf(req.filter);
    const limit = limitOf(req.limit);
    const team = teamOf(req);
    const w = lookback(deps.now(), daysOf(req));
    if (team !== undefined) {
      const { docs, users } = await readWindow(deps, teamScope(req.productId, team), w.days, false);
      const t = totalsOf(docs, users, source);
      const used = t.totalEvents > 0n || t.totalCost !== 0 || t.totalTokens > 0n;
      return { teams: used ? [{ teamId: team, cost: t.totalCost, tokens: t.totalTokens, events: t.totalEvents }] : [] };
    }
    const { users } = await readWindow(deps, teamsScope(req.productId), w.days, true, source);
    return { teams: topUsersOf(users, limit).map(({ userId, ...f }) => ({ teamId: userId, ...f })) };
  };
}
