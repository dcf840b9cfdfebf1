import { characters } from "@meter/lib/characters";
import { rpcError } from "@meter/lib/errors";
import type { PlansDeps } from "../deps.ts";
import { toTeam, toUser } from "./mapping.ts";
import type { UserDoc } from "../store/users.ts";
import { LIMITS } from "../domain/settings.ts";
import type { Change } from "../store/changes.ts";
import type { TeamDoc } from "../store/teams.ts";

export const EXTERNAL_USER_ID_MAX = 255;

export function checkExternalUserId(id: string): void {
  if (id.length === 0 || characters(id) > EXTERNAL_USER_ID_MAX) {
    throw rpcError.invalid(`external_user_id must be 1-${EXTERNAL_USER_ID_MAX} characters`);
  }
}

export function userNotFound(externalUserId: string) {
  return rpcError.notFound(`user "${externalUserId}" not found`);
}

/** External team ids follow the rules of external user ids. */
export function checkExternalTeamId(id: string): void {
  if (id.length === 0 || characters(id) > EXTERNAL_USER_ID_MAX) {
    throw rpcError.invalid(`external_team_id must be 1-${EXTERNAL_USER_ID_MAX} characters`);
  }
}

export function teamNotFound(externalTeamId: string) {
  return rpcError.notFound(`team "${externalTeamId}" not found; create it first (POST /teams)`);
}

/**
 * The users of `ids` (a page of the team's member list) whose latest membership is still this
 * team: the user document is the truth, an entry a crash left behind in the list is dropped.
 */
export async function currentMembers(deps: PlansDeps, productId: string, teamId: string, ids: readonly string[]): Promise<UserDoc[]> {
  return (await deps.users.getMany(productId, ids)).filter((u) => u.team?.team_id === teamId);
}

/** Teams as RPC messages, with the current names of their plans and their member counts (one read each for the lot). */
export async function teamMessages(deps: PlansDeps, productId: string, teams: readonly TeamDoc[]) {
  const names = await deps.plans.names(productId, teams.flatMap((t) => (t.current ? [t.current.plan_id] : [])));
  const counts = await deps.teamCounts.countsOf(productId, teams.map((t) => t.id));
  return teams.map((t) => toTeam(t, counts.get(t.id) ?? 0, t.current ? names.get(t.current.plan_id) : undefined));
}

/** The user as an RPC message, with the current name of its plan. */
export async function userMessage(deps: PlansDeps, productId: string, user: UserDoc) {
  const plan = user.current ? await deps.plans.get(productId, user.current.plan_id) : null;
  return toUser(user, plan?.name);
}

/**
 * Names a change for the client libraries' change marker (ListChanges), after the change is
 * stored. A failure here does not undo the change nor fail the call: clients then pick the
 * change up at their next periodic reload of the user (refreshIntervalMs), so it is logged.
 */
export async function announce(deps: PlansDeps, productId: string, change: Change): Promise<void> {
  try {
    await deps.changes.record(productId, change);
  } catch (err) {
    deps.logger.error({ err, productId, ...change }, "change marker not advanced; running clients see this change at their next periodic reload");
  }
}

/** The refusal of a change that would take the product's plans past LIMITS.planBytesPerProduct. */
export function tooLarge(has: number, adding: number): string {
  return (
    `would take the product's plans to ${has + adding} bytes of JSON; at most ${LIMITS.planBytesPerProduct} per product ` +
    `(its plans take ${has} now): use fewer or shorter map entries, in this plan or another`
  );
}
