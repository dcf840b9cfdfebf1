import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CurrentUsageSchema, PlanConfigSchema } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { limitToMessage } from "@meter/lib/plan-limits";
import { NO_PLAN_CONFIG, toDollars } from "@meter/rules";
import type { PlanInfo } from "../adapters/plans.ts";
import type { Totals } from "../domain/totals.ts";
import { modelBreakdown } from "../store/counters.ts";

/** The session view's plan_config of a plan, a user's or a team's (the API's plan defaults without one). */
export function planConfig(plan: PlanInfo | null): MessageInitShape<typeof PlanConfigSchema> {
  return {
    maxSpendPerPeriod: plan?.maxSpendPerPeriod,
    maxSpendPerSession: plan?.maxSpendPerSession,
    softGateAt: plan?.softGateAt ?? NO_PLAN_CONFIG.soft_gate_at,
    hardGateAt: plan?.hardGateAt ?? NO_PLAN_CONFIG.hard_gate_at,
    modelLimits: Object.fromEntries(
      Object.entries(plan?.modelLimits ?? {}).map(([m, l]) => [m, { maxTokensPerPeriod: BigInt(l.maxTokensPerPeriod) }]),
    ),
    costRates: plan?.costRates ?? {},
    sessionTimeoutMinutes: plan?.sessionTimeoutMinutes ?? NO_PLAN_CONFIG.session_timeout_minutes,
    defaultCostRate: plan?.defaultCostRate,
    toolCosts: plan?.toolCosts ?? {},
    defaultToolCost: plan?.defaultToolCost ?? NO_PLAN_CONFIG.default_tool_cost,
    preCallEstimate: plan?.preCallEstimate ?? NO_PLAN_CONFIG.pre_call_estimate,
    preCallBufferTokens: BigInt(plan?.preCallBufferTokens ?? NO_PLAN_CONFIG.pre_call_buffer_tokens),
    limits: (plan?.limits ?? []).map(limitToMessage),
    timeZone: plan?.timeZone ?? "UTC",
    creditsEnabled: plan?.creditsEnabled ?? false,
    creditsLowAt: plan?.creditsLowAt,
  };
}

/** The session view's current_usage of a period counter. */
export function currentUsage(counter: Totals | null | undefined): MessageInitShape<typeof CurrentUsageSchema> {
  const models = modelBreakdown(counter);
  return {
    periodCost: toDollars(counter?.cost ?? 0),
    periodTokensTotal: BigInt(counter?.tokens ?? 0),
    periodTokensByModel: models.tokens,
    periodCostByModel: models.dollars,
  };
}
