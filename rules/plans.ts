/**
 * Plan defaults of the API (docs/api.md), defined once: the plans service fills a new plan's unset fields
 * from PLAN_DEFAULTS, and ingestion's session view and the client library use NO_PLAN_CONFIG for a
 * user without a plan.
 */

export interface Rate {
  input: number;
  output: number;
}

/** Every rule-bearing setting of a plan, as the API names them (null caps: unlimited). */
export interface PlanRules {
  max_spend_per_period: number | null;
  max_spend_per_session: number | null;
  session_timeout_minutes: number;
  soft_gate_at: number;
  hard_gate_at: number;
  /** model -> max_tokens_per_period */
  model_limits: Record<string, number>;
  cost_rates: Record<string, Rate>;
  default_cost_rate: Rate | null;
  tool_costs: Record<string, number>;
  default_tool_cost: number;
  pre_call_estimate: boolean;
  pre_call_buffer_tokens: number;
}

export const PLAN_DEFAULTS: Readonly<PlanRules> = Object.freeze({
  max_spend_per_period: null,
  max_spend_per_session: null,
  session_timeout_minutes: 30,
  soft_gate_at: 0.8,
  hard_gate_at: 1,
  model_limits: {},
  cost_rates: {},
  default_cost_rate: null,
  tool_costs: {},
  default_tool_cost: 0.02,
  pre_call_estimate: false,
  pre_call_buffer_tokens: 4096,
});

/**
 * What applies to a user without a plan: nothing is capped, and nothing is priced (tools cost
 * nothing, as manual events of such users do); the session window and the pre-call buffer
 * are the plan defaults.
 */
export const NO_PLAN_CONFIG: Readonly<PlanRules> = Object.freeze({ ...PLAN_DEFAULTS, default_tool_cost: 0 });
