import type { ServiceImpl } from "@connectrpc/connect";
import type { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import type { AnalyticsDeps } from "../deps.ts";

/** Users and teams per plan (of a team's members, and the team, with `team_id`), as counted by the plans service; ordered by plan name. */
export function getPlanSubscribers(deps: AnalyticsDeps): ServiceImpl<typeof AnalyticsService>["getPlanSubscribers"] {
  return async (req) => {
    const plans = await deps.plans.countSubscribers(req.productId, req.teamId);
    plans.sort((a, b) => (a.planName < b.planName ? -1 : a.planName > b.planName ? 1 : 0));
    return { plans: plans.map((p) => ({ planName: p.planName, subscriberCount: BigInt(p.subscriberCount), teamSubscriberCount: BigInt(p.teamSubscriberCount) })) };
  };
}
