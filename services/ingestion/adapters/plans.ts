import type { Plan, ResolvedTeam, ResolvedUser, Subscription } from "@meter/proto/meter/plans/v1/plans_pb";
import { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcClient } from "@meter/lib/rpc";
import { fromTimestamp } from "@meter/lib/time";
import { limitFromMessage } from "@meter/lib/plan-limits";
import type { Pricing, Rate, SubscriptionWindow } from "@meter/rules";
import type { WindowLimit } from "../windows/shares.ts";

/** A plan as ingestion needs it: prices for cost rules, limits for thresholds and sessions. */
export interface PlanInfo {
  id: string;
  name: string;
  maxSpendPerPeriod?: number;
  maxSpendPerSession?: number;
  softGateAt: number;
  hardGateAt: number;
  modelLimits: Record<string, { maxTokensPerPeriod: number }>;
  costRates: Record<string, Rate>;
  defaultCostRate?: Rate;
  toolCosts: Record<string, number>;
  defaultToolCost: number;
  sessionTimeoutMinutes: number;
  preCallEstimate: boolean;
  preCallBufferTokens: number;
  /** The same prices as the rules module reads them (built once, sharing the records above). */
  pricing: Pricing;
  /** The plan's windows and rate limits (empty for a plan without) and their time zone. */
  limits: WindowLimit[];
  timeZone: string;
  /** Prepaid credits extend the period spend cap (credits/). */
  creditsEnabled: boolean;
  /** Dollars; undefined: credits.low never fires. */
  creditsLowAt?: number;
}

export interface KnownUser {
  /** Internal id (service_user_id). */
  id: string;
  externalUserId: string;
  /** Oldest first. */
  subscriptions: SubscriptionWindow[];
  /** Current configuration of every plan named in subscriptions, by plan id. */
  plans: Map<string, PlanInfo>;
  /** Team membership history, oldest first (empty: never in a team). */
  memberships: Membership[];
  /** Every team named in memberships, by service team id. */
  teams: Map<string, KnownTeam>;
}

/** One entry of a user's membership history: from `effectiveAt` on, its usage counts for `teamId` (null: for no team). */
export interface Membership {
  teamId: string | null;
  effectiveAt: Date;
}

/** A team as ingestion needs it: its ids and, as a user's, its subscription history and plans. */
export interface KnownTeam {
  /** Internal id (service_team_id): what its counters are keyed by. */
  id: string;
  externalTeamId: string;
  name: string;
  /** Oldest first. */
  subscriptions: SubscriptionWindow[];
  plans: Map<string, PlanInfo>;
}

/** What ingestion asks of the plans service: users with their subscription history. */
export interface UserDirectory {
  /** Only users that exist are in the map, keyed by external id. */
  resolve(productId: string, externalUserIds: readonly string[]): Promise<Map<string, KnownUser>>;
  /** Only teams that exist are in the map, keyed by external team id. */
  resolveTeams(productId: string, externalTeamIds: readonly string[]): Promise<Map<string, KnownTeam>>;
}

/** The plans service answers at most this many users per call. */
const RESOLVE_CHUNK = 1000;

const rate = (r: { input: number; output: number }): Rate => ({ input: r.input, output: r.output });

export function toPlanInfo(p: Plan): PlanInfo {
  const modelLimits = Object.fromEntries(
    Object.entries(p.modelLimits).map(([m, l]) => [m, { maxTokensPerPeriod: Number(l.maxTokensPerPeriod) }]),
  );
  const costRates = Object.fromEntries(Object.entries(p.costRates).map(([m, r]) => [m, rate(r)]));
  const defaultCostRate = p.defaultCostRate ? rate(p.defaultCostRate) : undefined;
  const toolCosts = { ...p.toolCosts };
  return {
    id: p.id,
    name: p.name,
    maxSpendPerPeriod: p.maxSpendPerPeriod,
    maxSpendPerSession: p.maxSpendPerSession,
    softGateAt: p.softGateAt,
    hardGateAt: p.hardGateAt,
    modelLimits,
    costRates,
    defaultCostRate,
    toolCosts,
    defaultToolCost: p.defaultToolCost,
    sessionTimeoutMinutes: p.sessionTimeoutMinutes,
    preCallEstimate: p.preCallEstimate,
    preCallBufferTokens: Number(p.preCallBufferTokens),
    pricing: {
      cost_rates: costRates,
      model_limits: modelLimits,
      default_cost_rate: defaultCostRate ?? null,
      tool_costs: toolCosts,
      default_tool_cost: p.defaultToolCost,
    },
    limits: p.limits.map(limitFromMessage),
    // A plans service older than windows answers none: UTC, as a plan without one.
    timeZone: p.timeZone || "UTC",
    creditsEnabled: p.creditsEnabled,
    creditsLowAt: p.creditsLowAt,
  };
}

function toWindows(subscriptions: readonly Subscription[]): SubscriptionWindow[] {
  return subscriptions.map((s) => ({
    planId: s.planId,
    planName: s.planName,
    periodStart: fromTimestamp(s.periodStart),
    periodEnd: fromTimestamp(s.periodEnd),
    effectiveAt: fromTimestamp(s.effectiveAt) ?? new Date(0),
  }));
}

const toPlans = (plans: Record<string, Plan>) => new Map(Object.entries(plans).map(([id, p]) => [id, toPlanInfo(p)]));

export function toKnownTeam(r: ResolvedTeam): KnownTeam {
  return { id: r.team!.id, externalTeamId: r.team!.externalTeamId, name: r.team!.name, subscriptions: toWindows(r.subscriptions), plans: toPlans(r.plans) };
}

export function toKnownUser(r: ResolvedUser): KnownUser {
  return {
    id: r.user!.id,
    externalUserId: r.user!.externalUserId,
    subscriptions: toWindows(r.subscriptions),
    plans: toPlans(r.plans),
    memberships: r.memberships.map((m) => ({ teamId: m.teamId || null, effectiveAt: fromTimestamp(m.effectiveAt) ?? new Date(0) })),
    teams: new Map(Object.values(r.teams).flatMap((t) => (t.team ? [[t.team.id, toKnownTeam(t)] as const] : []))),
  };
}

/** Distinct ids resolved RESOLVE_CHUNK at a time, one call after the other, into one map. */
async function inChunks<T>(ids: readonly string[], resolve: (chunk: string[]) => Promise<(readonly [string, T])[]>): Promise<Map<string, T>> {
  const distinct = [...new Set(ids)];
  const out = new Map<string, T>();
  for (let i = 0; i < distinct.length; i += RESOLVE_CHUNK) for (const [id, v] of await resolve(distinct.slice(i, i + RESOLVE_CHUNK))) out.set(id, v);
  return out;
}

export function plansDirectory(baseUrl: string): UserDirectory {
  const client = rpcClient(PlansService, baseUrl);
  return {
    async resolve(productId, externalUserIds) {
      return inChunks(externalUserIds, async (chunk) =>
        (await client.resolveUsers({ productId, externalUserIds: chunk })).users.flatMap((u) => (u.user ? [[u.user.externalUserId, toKnownUser(u)] as const] : [])),
      );
    },
    async resolveTeams(productId, externalTeamIds) {
      return inChunks(externalTeamIds, async (chunk) =>
        (await client.resolveTeams({ productId, externalTeamIds: chunk })).teams.flatMap((t) => (t.team ? [[t.team.externalTeamId, toKnownTeam(t)] as const] : [])),
      );
    },
  };
}
