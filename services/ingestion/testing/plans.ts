// Plans and limits as the plans service gives them, for pure tests of what ingestion computes from them.
import type { PlanInfo } from "../adapters/plans.ts";
import type { WindowLimit } from "../windows/shares.ts";

/** A limit with every field the plans service sends, `fields` over a $1 daily spend limit. */
export const limit = (name: string, fields: Partial<WindowLimit>): WindowLimit => ({
  name,
  metric: "spend",
  max: 1,
  window: "day",
  duration_minutes: null,
  model: null,
  soft_gate_at: null,
  hard_gate_at: null,
  scope: null,
  ...fields,
});

/** A plan of $1 a period in UTC with `limits` and `costRates`. */
export function plan(id: string, limits: WindowLimit[] = [], costRates: PlanInfo["costRates"] = {}): PlanInfo {
  return {
    id,
    name: id,
    maxSpendPerPeriod: 1,
    softGateAt: 0.8,
    hardGateAt: 1,
    modelLimits: {},
    costRates,
    toolCosts: {},
    defaultToolCost: 0,
    sessionTimeoutMinutes: 30,
    preCallEstimate: false,
    preCallBufferTokens: 0,
    pricing: { cost_rates: costRates, model_limits: {}, default_cost_rate: null, tool_costs: {}, default_tool_cost: 0 },
    limits,
    timeZone: "UTC",
    creditsEnabled: false,
  };
}
