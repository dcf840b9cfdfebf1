import { Type, type Static, type TSchema } from "typebox";
import { Body, DateTime, Nullable } from "./common.ts";

const Money = Type.Number({ minimum: 0, description: "Dollars, non-negative" });
const Ratio = Type.Number({ minimum: 0, maximum: 1 });
const TokenCount = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });

export const CostRateBody = Body(
  { input: Money, output: Money },
  "Dollars per 1K input and output tokens",
);

// A description is given on purpose: Body() without one leaves `description: undefined` in
// the schema, which @fastify/swagger trips over inside a record's values.
export const ModelLimitBody = Body({ max_tokens_per_period: TokenCount }, "Token cap per billing period");

/** A plan's map keyed by model or tool name: the plans service's limits (services/plans/domain/settings.ts), checked here first for a 422. */
const NameMap = <T extends TSchema>(value: T, what: string) =>
  Type.Record(Type.String(), value, {
    maxProperties: 1000,
    propertyNames: { minLength: 1, maxLength: 255 },
    description: `${what}; at most 1,000 entries, names 1-255 characters`,
  });

/** Every plan setting (docs/api.md, "Plans"); absent fields take their defaults, null means unlimited/none. */
const planSettings = {
  name: Type.String({ minLength: 1, maxLength: 255 }),
  max_spend_per_period: Type.Optional(Nullable(Money)),
  max_spend_per_session: Type.Optional(Nullable(Money)),
  session_timeout_minutes: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  soft_gate_at: Type.Optional(Ratio),
  hard_gate_at: Type.Optional(Ratio),
  model_limits: Type.Optional(NameMap(ModelLimitBody, "Token caps by model")),
  cost_rates: Type.Optional(NameMap(CostRateBody, "Rates by model")),
  default_cost_rate: Type.Optional(Nullable(CostRateBody)),
  tool_costs: Type.Optional(NameMap(Money, "Dollars per call by tool")),
  default_tool_cost: Type.Optional(Money),
  pre_call_estimate: Type.Optional(Type.Boolean()),
  pre_call_buffer_tokens: Type.Optional(TokenCount),
};

export const NewPlanBody = Body(planSettings, "A plan; every field but name is optional");

export const PlanPatchBody = Body(
  { ...planSettings, name: Type.Optional(planSettings.name) },
  "Any subset of the plan fields; only those sent change. null clears max_spend_* and default_cost_rate.",
);

export type PlanInput = Static<typeof PlanPatchBody>;

export const CreatePlansBody = Body({
  soft_gate_at: Type.Optional({ ...Ratio, description: "Applies to every plan that does not set its own (default 0.80)" }),
  hard_gate_at: Type.Optional({ ...Ratio, description: "Applies to every plan that does not set its own (default 1.00)" }),
  plans: Type.Array(NewPlanBody, { minItems: 1, maxItems: 100 }),
});

const CostRate = Type.Object({ input: Type.Number(), output: Type.Number() });

export const PlanBody = Type.Object({
  id: Type.String({ format: "uuid" }),
  name: Type.String(),
  max_spend_per_period: Nullable(Type.Number()),
  max_spend_per_session: Nullable(Type.Number()),
  session_timeout_minutes: Type.Number(),
  soft_gate_at: Type.Number(),
  hard_gate_at: Type.Number(),
  model_limits: Type.Record(Type.String(), Type.Object({ max_tokens_per_period: Type.Integer() })),
  cost_rates: Type.Record(Type.String(), CostRate),
  default_cost_rate: Nullable(CostRate),
  tool_costs: Type.Record(Type.String(), Type.Number()),
  default_tool_cost: Type.Number(),
  pre_call_estimate: Type.Boolean(),
  pre_call_buffer_tokens: Type.Integer(),
  created_at: DateTime,
  updated_at: DateTime,
});
