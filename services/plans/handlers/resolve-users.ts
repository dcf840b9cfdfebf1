import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcError } from "@meter/lib/errors";
import { toMembership, toSubscription, toUser } from "./mapping.ts";
import type { PlansDeps } from "../deps.ts";
import { plansOf, resolvedTeams } from "./resolve-teams.ts";

export const RESOLVE_MAX_USERS = 1000;

/**
 * One query by the users' `_id`s (each history is inside), for users in teams one by the
 * teams' `_id`s (both through the user cache), and one by the plans named but not cached (PlanStore.resolved): the cost grows with the batch, not with the
 * number of users or teams the product has. The user's plan is the latest entry of its
 * history; each user carries every team its membership history names, with that team's
 * subscriptions and plans.
 */
export function resolveUsers(deps: PlansDeps): ServiceImpl<typeof PlansService>["resolveUsers"] {
  return async (req) => {
    const productId = req.productId;
    if (req.externalUserIds.length > RESOLVE_MAX_USERS) {
      throw rpcError.invalid(`at most ${RESOLVE_MAX_USERS} users per request`);
    }
    const users = await deps.users.getMany(productId, req.externalUserIds);
    const teamIds = new Set(users.flatMap((u) => u.memberships.flatMap((m) => (m.external_team_id === null ? [] : [m.external_team_id]))));
    const teams = teamIds.size === 0 ? [] : await deps.teams.getMany(productId, [...teamIds]);
    const planIds = [...users, ...teams].flatMap((x) => x.subscriptions.map((s) => s.plan_id));
    const plans = new Map((await deps.plans.resolved(productId, planIds)).map((p) => [p.id, p]));
    const resolved = new Map(resolvedTeams(teams, plans).map((t) => [t.team!.id, t]));
    return {
      users: users.map((u) => ({
        user: toUser(u, u.current ? plans.get(u.current.plan_id)?.name : undefined),
        subscriptions: u.subscriptions.map((s) => toSubscription(s, plans.get(s.plan_id)?.name)),
        plans: plansOf(u.subscriptions, plans),
        memberships: u.memberships.map(toMembership),
        teams: Object.fromEntries(
          [...new Set(u.memberships.flatMap((m) => (m.team_id === null ? [] : [m.team_id])))].flatMap((id) => {
            const t = resolved.get(id);
            return t ? [[id, t]] : [];
          }),
        ),
      })),
    };
  };
}
