import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import type { PlansDeps } from "../deps.ts";
import { currentMembers, teamNotFound } from "./common.ts";
import { decodeCursor, encodeCursor, pageSize, userMessages } from "./list-users.ts";

/**
 * A page of the team's current members in external user id order: one range read of the team's
 * member list, then those users by `_id`, keeping those whose latest membership is this team
 * (the user document is the truth; an entry a crash left behind is dropped, so a page may be
 * shorter than `limit` and still carry a cursor). The cost is the page's, whatever the team,
 * the product or the collection holds.
 */
export function listTeamMembers(deps: PlansDeps): ServiceImpl<typeof PlansService>["listTeamMembers"] {
  return async (req) => {
    const productId = req.productId;
    const limit = pageSize(req.limit);
    const after = req.cursor ? decodeCursor(req.cursor) : undefined;
    const team = await deps.teams.get(productId, req.externalTeamId);
    if (!team) throw teamNotFound(req.externalTeamId);
    const ids = await deps.teamMembers.page(productId, team.id, "", after, limit + 1);
    const listed = ids.slice(0, limit);
    const users = await currentMembers(deps, productId, team.id, listed);
    const last = listed.at(-1);
    return {
      users: await userMessages(deps, productId, users),
      nextCursor: ids.length > limit && last !== undefined ? encodeCursor(last) : undefined,
    };
  };
}
