import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { ResolvedTeamSchema, type Plan, type PlansService, type ResolvedTeam } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcError } from "@meter/lib/errors";
import type { PlansDeps } from "../deps.ts";
import type { StoredPlan } from "../store/plans.ts";
import type { SubscriptionEntry } from "../store/subscriptions.ts";
import type { TeamDoc } from "../store/teams.ts";
import { toPlan, toSubscription, toTeam } from "./mapping.ts";

export const RESOLVE_MAX_TEAMS = 1000;

/** Every plan a history names, by id, as the plans' current configuration. */
export function plansOf(subscriptions: readonly SubscriptionEntry[], plans: ReadonlyMap<string, StoredPlan>): Record<string, Plan> {
  return Object.fromEntries(
    [...new Set(subscriptions.map((s) => s.plan_id))].flatMap((id) => {
      const p = plans.get(id);
      return p ? [[id, toPlan(p)]] : [];
    }),
  );
}

/**
 * Teams with their histories and plans: `plans` must hold every plan their histories name
 * (PlanStore.resolved, with the users' plans when resolving users). No member count: counting
 * and sessions do not use it, and it would be one more read before every member's session
 * (GetTeam and ListTeams carry it).
 */
export function resolvedTeams(teams: readonly TeamDoc[], plans: ReadonlyMap<string, StoredPlan>): ResolvedTeam[] {
  return teams.map((t) =>
    create(ResolvedTeamSchema, {
      team: toTeam(t, 0, t.current ? plans.get(t.current.plan_id)?.name : undefined),
      subscriptions: t.subscriptions.map((s) => toSubscription(s, plans.get(s.plan_id)?.name)),
      plans: plansOf(t.subscriptions, plans),
    }),
  );
}

/** Teams by external id for attributing their usage (team routes): one read of the teams (through the cache), one of the plans not cached. */
export function resolveTeams(deps: PlansDeps): ServiceImpl<typeof PlansService>["resolveTeams"] {
  return async (req) => {
    const productId = req.productId;
    if (req.externalTeamIds.length > RESOLVE_MAX_TEAMS) throw rpcError.invalid(`at most ${RESOLVE_MAX_TEAMS} teams per request`);
    const teams = await deps.teams.getMany(productId, req.externalTeamIds);
    const plans = new Map((await deps.plans.resolved(productId, teams.flatMap((t) => t.subscriptions.map((s) => s.plan_id)))).map((p) => [p.id, p]));
    return { teams: resolvedTeams(teams, plans) };
  };
}
