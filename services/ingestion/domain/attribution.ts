import { periodAt, type BillingPeriod } from "@meter/rules";
import type { KnownTeam, KnownUser, Membership, PlanInfo } from "../adapters/plans.ts";
import { counterId } from "./counter-ids.ts";

/** Where usage at time `t` of a user goes: its billing period, plan and counter. */
export interface Attribution {
  period: BillingPeriod;
  plan: PlanInfo | null;
  counterId: string;
}

export function attribute(productId: string, userId: string, user: KnownUser | undefined, t: Date): Attribution {
  const period = periodAt(user?.subscriptions ?? [], t);
  const plan = (period.subscription && user?.plans.get(period.subscription.planId)) || null;
  return { period, plan, counterId: counterId(productId, userId, period.start) };
}

/**
 * Where usage at time `t` of a member goes for its team (BUDGETS.md §4): the team its membership
 * history names at `t`, that team's billing period and plan at `t` (the user's rules applied to
 * the team's subscriptions), and the team's period counter (in the teams' own collection, keyed
 * by the service team id). Null when the user was in no team at `t`, or its team had no plan.
 */
export interface TeamAttribution {
  team: KnownTeam;
  period: BillingPeriod;
  plan: PlanInfo;
  counterId: string;
}

export function attributeTeam(productId: string, user: KnownUser | undefined, t: Date): TeamAttribution | null {
  const teamId = membershipAt(user?.memberships ?? [], t);
  const team = teamId === null ? undefined : user!.teams.get(teamId);
  return team ? teamAt(productId, team, t) : null;
}

/** A team's period, plan and counter at `t`; null when it has no plan then. */
export function teamAt(productId: string, team: KnownTeam, t: Date): TeamAttribution | null {
  const period = periodAt(team.subscriptions, t);
  const plan = period.subscription && team.plans.get(period.subscription.planId);
  if (!plan) return null;
  return { team, period, plan, counterId: counterId(productId, team.id, period.start) };
}

/**
 * The field naming, for analytics, the team `user`'s membership names at `t` (its external
 * id), whether or not the team has a plan: usage and gates are reported by the team they were
 * attributed to when counted, so a member moved later leaves its past with the old team.
 */
export function analyticsTeam(user: KnownUser | undefined, t: Date): { team_id?: string } {
  const teamId = membershipAt(user?.memberships ?? [], t);
  const team = teamId === null ? undefined : user?.teams.get(teamId);
  return team ? { team_id: team.externalTeamId } : {};
}

/**
 * The team a membership history names at `t`: the latest entry (in the history's order, never
 * clocks compared) in effect at or before `t`; null before the first entry or after a leave.
 */
export function membershipAt(history: readonly Membership[], t: Date): string | null {
  for (let i = history.length - 1; i >= 0; i--) {
    if (history[i]!.effectiveAt <= t) return history[i]!.teamId;
  }
  return null;
}

/** Whether usage under the plan draws credits: credits enabled and an allowance to go beyond (BUDGETS.md §3). */
export function drawsCredits(plan: PlanInfo | null | undefined): boolean {
  return plan?.creditsEnabled === true && plan.maxSpendPerPeriod !== undefined;
}

/** The attribution fields every stored usage event carries. */
export function attributionFields(a: Attribution) {
  return {
    counter_id: a.counterId,
    period_start: a.period.start,
    period_end: a.period.end,
    plan_name: a.plan?.name ?? null,
    spend_limit: a.plan?.maxSpendPerPeriod ?? null,
    // Only where usage beyond the allowance draws credits (credits/settle.ts); absent otherwise.
    ...(drawsCredits(a.plan) && { credits: { low_at: a.plan!.creditsLowAt ?? null } }),
  };
}
