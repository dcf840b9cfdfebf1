import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import type { PlansDeps } from "../deps.ts";
import { teamMessages, teamNotFound } from "./common.ts";

export function getTeam(deps: PlansDeps): ServiceImpl<typeof PlansService>["getTeam"] {
  return async (req) => {
    const team = await deps.teams.get(req.productId, req.externalTeamId);
    if (!team) throw teamNotFound(req.externalTeamId);
    const [message] = await teamMessages(deps, req.productId, [team]);
    return { team: message };
  };
}
