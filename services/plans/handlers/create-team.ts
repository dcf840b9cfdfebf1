import { characters } from "@meter/lib/characters";
import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcError } from "@meter/lib/errors";
import type { PlansDeps } from "../deps.ts";
import { toTeam } from "./mapping.ts";
import { checkExternalTeamId } from "./common.ts";

export const TEAM_NAME_MAX = 255;

/** The team's `_id` (product and external id) makes concurrent creations yield one team. */
export function createTeam(deps: PlansDeps): ServiceImpl<typeof PlansService>["createTeam"] {
  return async (req) => {
    checkExternalTeamId(req.externalTeamId);
    if (req.name.length === 0 || characters(req.name) > TEAM_NAME_MAX) throw rpcError.invalid(`name must be 1-${TEAM_NAME_MAX} characters`);
    const team = await deps.teams.insert(req.productId, req.externalTeamId, req.name);
    if (!team) throw rpcError.alreadyExists(`team "${req.externalTeamId}" already exists`);
    deps.logger.info({ productId: req.productId, teamId: team.id }, "team created");
    return { team: toTeam(team, 0) };
  };
}
