import { create } from "@bufbuild/protobuf";
import {
  PlanSchema,
  SubscriptionSchema,
  TeamMembershipSchema,
  TeamSchema,
  UserSchema,
  type Plan,
  type Subscription,
  type Team,
  type TeamMembership,
  type User,
} from "@meter/proto/meter/plans/v1/plans_pb";
import { optionalTimestamp, toTimestamp } from "@meter/lib/time";
import { limitToMessage } from "@meter/lib/plan-limits";
import type { StoredPlan } from "../store/plans.ts";
import type { MembershipEntry, SubscriptionEntry, UserDoc } from "../store/users.ts";
import type { TeamDoc } from "../store/teams.ts";

const optional = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

export function toPlan(p: StoredPlan): Plan {
  return create(PlanSchema, {
    id: p.id,
    name: p.name,
    maxSpendPerPeriod: optional(p.max_spend_per_period),
    maxSpendPerSession: optional(p.max_spend_per_session),
    sessionTimeoutMinutes: p.session_timeout_minutes,
    softGateAt: p.soft_gate_at,
    hardGateAt: p.hard_gate_at,
    modelLimits: Object.fromEntries(
      Object.entries(p.model_limits).map(([m, max]) => [m, { maxTokensPerPeriod: BigInt(max) }]),
    ),
    costRates: p.cost_rates,
    defaultCostRate: optional(p.default_cost_rate),
    toolCosts: p.tool_costs,
    defaultToolCost: p.default_tool_cost,
    preCallEstimate: p.pre_call_estimate,
    preCallBufferTokens: BigInt(p.pre_call_buffer_tokens),
    createdAt: toTimestamp(p.created_at),
    updatedAt: toTimestamp(p.updated_at),
    limits: p.limits.map(limitToMessage),
    timeZone: p.time_zone,
    creditsEnabled: p.credits_enabled,
    creditsLowAt: optional(p.credits_low_at),
  });
}

/**
 * `planName` is the plan's current name (plans can be renamed); the name recorded when the
 * subscription was set is the fallback.
 */
export function toUser(u: UserDoc, planName?: string): User {
  return create(UserSchema, {
    id: u.id,
    externalUserId: u.external_user_id,
    name: optional(u.name),
    planName: u.current ? (planName ?? u.current.plan_name) : undefined,
    billingSubscriptionId: optional(u.current?.billing_subscription_id ?? null),
    createdAt: toTimestamp(u.created_at),
    updatedAt: toTimestamp(u.updated_at),
    teamId: u.team?.external_team_id ?? undefined,
  });
}

/** `planName` as for toUser; `memberCount` from the team's count. */
export function toTeam(t: TeamDoc, memberCount: number, planName?: string): Team {
  return create(TeamSchema, {
    id: t.id,
    externalTeamId: t.external_team_id,
    name: t.name,
    planName: t.current ? (planName ?? t.current.plan_name) : undefined,
    billingSubscriptionId: optional(t.current?.billing_subscription_id ?? null),
    createdAt: toTimestamp(t.created_at),
    updatedAt: toTimestamp(t.updated_at),
    memberCount: BigInt(memberCount),
  });
}

export function toMembership(m: MembershipEntry): TeamMembership {
  return create(TeamMembershipSchema, {
    teamId: optional(m.team_id),
    externalTeamId: optional(m.external_team_id),
    effectiveAt: toTimestamp(m.effective_at),
  });
}

export function toSubscription(s: SubscriptionEntry, planName?: string): Subscription {
  return create(SubscriptionSchema, {
    id: s.id,
    planId: s.plan_id,
    planName: planName ?? s.plan_name,
    billingSubscriptionId: optional(s.billing_subscription_id),
    periodStart: optionalTimestamp(s.period_start),
    periodEnd: optionalTimestamp(s.period_end),
    effectiveAt: toTimestamp(s.effective_at),
  });
}
