import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import type { PlansDeps } from "../deps.ts";
import { currentMembers, teamNotFound } from "./common.ts";

/** Members read at a time when counting a team's. */
const MEMBER_PAGE = 1_000;

/**
 * Per plan id, the team's current members subscribed to it (NOT_FOUND for an unknown team): its
 * member list a page at a time (currentMembers), each counted under its current plan. One range
 * read and one `_id` read a thousand members, holding one page.
 */
async function teamCounts(deps: PlansDeps, productId: string, externalTeamId: string): Promise<{ users: Map<string, number>; teams: Map<string, number> }> {
  const team = await deps.teams.get(productId, externalTeamId);
  if (!team) throw teamNotFound(externalTeamId);
  const teams = new Map(team.current ? [[team.current.plan_id, 1]] : []);
  const counts = new Map<string, number>();
  for (let after: string | undefined; ; ) {
    const ids = await deps.teamMembers.page(productId, team.id, "", after, MEMBER_PAGE);
    for (const u of await currentMembers(deps, productId, team.id, ids)) {
      const planId = u.current?.plan_id;
      if (planId) counts.set(planId, (counts.get(planId) ?? 0) + 1);
    }
    if (ids.length < MEMBER_PAGE) return { users: counts, teams };
    after = ids.at(-1);
  }
}

/**
 * Every plan of the product, with zero for plans nobody is on, in plan creation order: the users
 * and the teams on each. With a team, its current members only (their own subscriptions), and
 * the team itself on its plan.
 */
export function countSubscribers(deps: PlansDeps): ServiceImpl<typeof PlansService>["countSubscribers"] {
  return async (req) => {
    const productId = req.productId;
    const teamCount = req.externalTeamId === undefined ? undefined : teamCounts(deps, productId, req.externalTeamId);
    teamCount?.catch(() => {});
    // Names only: the plans' maps are not needed here.
    const names = await deps.plans.names(productId);
    const ids = [...names.keys()];
    const { users, teams } = (await teamCount) ?? {
      users: await deps.subscribers.countsOf(productId, ids),
      teams: await deps.teamSubscribers.countsOf(productId, ids),
    };
    return {
      plans: [...names].map(([id, name]) => ({ planName: name, subscriberCount: BigInt(users.get(id) ?? 0), teamSubscriberCount: BigInt(teams.get(id) ?? 0) })),
    };
  };
}
