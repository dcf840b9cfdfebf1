import type { IngestionDeps } from "../deps.ts";
import { attribute, teamAt } from "../domain/attribution.ts";
import { teamOwner, userOwner } from "../credits/account.ts";
import { requireTeam, requireUser } from "./common.ts";

/** Whose credits a request names: a user's, or a team's shared pool (`team_id` set, `user_id` empty). */
export interface CreditOwner {
  owner: string;
  /** The credits_low_at of the plan in force now (the user's own, or the team's). */
  lowAt: number | undefined;
  /** Whether that plan has credits enabled. */
  enabled: boolean;
  /** What the answer echoes. */
  ids: { userId: string; teamId?: string };
}

/** The user or team a credit request names, or NOT_FOUND (one resolve either way). */
export async function creditOwner(deps: IngestionDeps, req: { productId: string; userId: string; teamId?: string }): Promise<CreditOwner> {
  if (req.teamId !== undefined) {
    const team = await requireTeam(deps, req.productId, req.teamId);
    const plan = teamAt(req.productId, team, deps.now())?.plan;
    return { owner: teamOwner(req.teamId), lowAt: plan?.creditsLowAt, enabled: plan?.creditsEnabled ?? false, ids: { userId: "", teamId: req.teamId } };
  }
  const user = await requireUser(deps, req.productId, req.userId);
  const plan = attribute(req.productId, req.userId, user, deps.now()).plan;
  return { owner: userOwner(req.userId), lowAt: plan?.creditsLowAt, enabled: plan?.creditsEnabled ?? false, ids: { userId: req.userId } };
}
