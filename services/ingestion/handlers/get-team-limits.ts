import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import type { IngestionDeps } from "../deps.ts";
import { teamAt } from "../domain/attribution.ts";
import { readTeam, teamLimits } from "../teams/view.ts";
import { requireTeam } from "./common.ts";
import { catchUpTeam } from "../late-changes/follow.ts";

/** The team-scope dimensions of a team's plan in force now, with the team's sums (member-scope ones belong to each member's view). */
export function getTeamLimits(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["getTeamLimits"] {
  return async (req) => {
    const productId = req.productId;
    const team = await requireTeam(deps, productId, req.teamId);
    await catchUpTeam(deps, productId, team);
    const now = deps.now();
    const state = await readTeam(deps, productId, teamAt(productId, team, now), now);
    return { teamId: req.teamId, limits: teamLimits(state, "none", now) };
  };
}
