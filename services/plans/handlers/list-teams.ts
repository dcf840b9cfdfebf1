import { characters } from "@meter/lib/characters";
import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcError } from "@meter/lib/errors";
import type { PlansDeps } from "../deps.ts";
import { EXTERNAL_USER_ID_MAX, teamMessages } from "./common.ts";
import { decodeCursor, encodeCursor, pageSize } from "./list-users.ts";

/**
 * A page of the product's teams in external id order, as a page of users: one `_id` range read
 * of the teams (one row more than the page, to tell whether another follows), then the names of
 * their plans and their member counts, one read each.
 */
export function listTeams(deps: PlansDeps): ServiceImpl<typeof PlansService>["listTeams"] {
  return async (req) => {
    const limit = pageSize(req.limit);
    if (characters(req.prefix) > EXTERNAL_USER_ID_MAX) throw rpcError.invalid(`prefix must be at most ${EXTERNAL_USER_ID_MAX} characters`);
    const after = req.cursor ? decodeCursor(req.cursor, "t") : undefined;
    const rows = await deps.teams.page(req.productId, req.prefix, after, limit + 1);
    const teams = rows.slice(0, limit);
    const last = teams.at(-1)?.external_team_id;
    return {
      teams: await teamMessages(deps, req.productId, teams),
      nextCursor: rows.length > limit && last !== undefined ? encodeCursor(last, "t") : undefined,
    };
  };
}
