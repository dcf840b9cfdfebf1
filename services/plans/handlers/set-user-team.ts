import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import type { PlansDeps } from "../deps.ts";
import type { MembershipEntry } from "../store/users.ts";
import { announce, teamNotFound, userMessage, userNotFound } from "./common.ts";

/**
 * Puts a user in a team, or in none: a membership entry appended to the user's history (one
 * atomic write orders concurrent changes; usage is attributed by the entry in force at an
 * event's time, so past usage stays with its team). As SetSubscription keeps the plans' member
 * lists: listed in the new team's members before the entry is stored, the entry it replaces
 * taken off its team after, and the member counts moved from that team to this one. The user
 * is named in the change marker. Asking for the team the user is in already changes nothing.
 */
export function setUserTeam(deps: PlansDeps): ServiceImpl<typeof PlansService>["setUserTeam"] {
  return async (req) => {
    const productId = req.productId;
    // Read past the cache: a team asked for again is a no-op only if the user is in it now.
    const user = await deps.users.getCurrent(productId, req.externalUserId);
    if (!user) throw userNotFound(req.externalUserId);
    const team = req.externalTeamId === undefined ? null : await deps.teams.get(productId, req.externalTeamId);
    if (req.externalTeamId !== undefined && !team) throw teamNotFound(req.externalTeamId);
    if ((user.team?.team_id ?? null) === (team?.id ?? null)) return { user: await userMessage(deps, productId, user) };

    const entry: MembershipEntry = { id: randomUUID(), team_id: team?.id ?? null, external_team_id: team?.external_team_id ?? null, effective_at: new Date() };
    if (team) await deps.teamMembers.add(productId, team.id, req.externalUserId, entry.id);
    const appended = await deps.users.appendMembership(productId, req.externalUserId, entry);
    if (!appended) throw userNotFound(req.externalUserId);
    const { user: updated, previous } = appended;
    await deps.teamCounts.move(productId, previous?.team_id ?? null, entry.team_id);
    if (previous?.team_id) await deps.teamMembers.remove(productId, previous.team_id, req.externalUserId, previous.id);
    await announce(deps, productId, { externalUserId: req.externalUserId });
    deps.logger.info({ productId, userId: updated.id, teamId: entry.team_id }, "user team set");
    // The user as this change left it: a concurrent later change is not reported as this one's.
    const at = updated.memberships.findIndex((m) => m.id === entry.id);
    const asSet = { ...updated, memberships: updated.memberships.slice(0, at + 1), team: entry.team_id ? entry : null };
    return { user: await userMessage(deps, productId, asSet) };
  };
}
