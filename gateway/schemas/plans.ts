import { Type, type Static, type TSchema } from "typebox";
import { MAX_PLAN_DOLLARS, METRICS, WINDOWS, type Metric, type WindowKind } from "@meter/rules";
import type { Plan, PlanLimit } from "@meter/proto/meter/plans/v1/plans_pb";
import type { PlanConfig } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { LIMIT_SCOPES, limitFromMessage, type LimitScope } from "@meter/lib/plan-limits";
import { Body, DateTime, KeyedBy, Nullable } from "./common.ts";

const Money = Type.Number({ minimum: 0, maximum: MAX_PLAN_DOLLARS, description: "Dollars, 0 to 1e9" });
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
  KeyedBy(value, {
    maxProperties: 1000,
    propertyNames: { minLength: 1, maxLength: 255 },
    description: `${what}; at most 1,000 entries, names 1-255 characters`,
  });

/**
 * One entry of a plan's `limits` (docs/api.md, "Windows and rate limits"). Values are checked by
 * the plans service, which answers 400 naming the limit and the field (an unknown metric or
 * window, a duplicate name, duration_minutes where it does not belong); here only their types.
 */
export const LimitBody = Body(
  {
    name: Type.String({ description: "1-64 of a-z, 0-9, _ and -, unique in the plan; the gate reason is limit:<name>" }),
    metric: Type.String({ description: "spend (dollars at the plan's prices), tokens (input + output) or requests (metered calls)" }),
    max: Type.Number({ description: "Dollars for spend, a whole number for tokens and requests; 0 blocks every call" }),
    window: Type.String({
      description: "minute, hour, day, week (from Monday), month (calendar windows in the plan's time_zone), period (the billing period) or rolling",
    }),
    duration_minutes: Type.Optional(Nullable(Type.Number({ description: "Rolling windows only (required there): the last N minutes, 1-44,640" }))),
    model: Type.Optional(Nullable(Type.String({ description: "Count only calls of this model; null counts every call" }))),
    soft_gate_at: Type.Optional(Nullable(Type.Number({ description: "0-1; null: the plan's" }))),
    hard_gate_at: Type.Optional(Nullable(Type.Number({ description: "0-1; null: the plan's" }))),
    scope: Type.Optional(
      Nullable(
        Type.String({
          description:
            "On a team's plan: team (the sum over all members; the default, also for null) or member (each member separately, e.g. $50 a month each); ignored on a user's plan",
        }),
      ),
    ),
  },
  "A cap on a metric over a window",
);

export type LimitInput = Static<typeof LimitBody>;

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
  limits: Type.Optional(
    Nullable(Type.Array(LimitBody, { description: "Windows and rate limits, at most 16 (400 beyond); a PATCH replaces them whole, null or [] clears them" })),
  ),
  time_zone: Type.Optional(
    Nullable(Type.String({ description: 'IANA time zone the calendar windows reset in (e.g. "America/New_York"); default and null: "UTC"' })),
  ),
  credits_enabled: Type.Optional(
    Type.Boolean({ description: "Prepaid credits: the user's balance extends the period spend cap, usage beyond max_spend_per_period draws it (default false)" }),
  ),
  credits_low_at: Type.Optional(
    Nullable(Type.Number({ minimum: 0, maximum: 1e9, description: "Dollars: credits.low fires when the balance falls below it; default and null: never" })),
  ),
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

/** A plan's limit as answered: every field, null when not given. */
export const LimitOut = Type.Object({
  name: Type.String(),
  metric: Type.Unsafe<Metric>({ type: "string", enum: [...METRICS] }),
  max: Type.Number(),
  window: Type.Unsafe<WindowKind>({ type: "string", enum: [...WINDOWS] }),
  duration_minutes: Nullable(Type.Integer()),
  model: Nullable(Type.String()),
  soft_gate_at: Nullable(Type.Number({ description: "null: the plan's" })),
  hard_gate_at: Nullable(Type.Number({ description: "null: the plan's" })),
  scope: Type.Unsafe<LimitScope>({ type: "string", enum: [...LIMIT_SCOPES], description: "On a team's plan: team (the members' sum) or member (each member's own); team when not given" }),
});

/** A plan's limit as answered, `scope` shown as team when not given. */
export function limitJson(l: PlanLimit) {
  return { ...limitFromMessage(l), scope: l.scope === "member" ? ("member" as const) : ("team" as const) };
}

/**
 * The run of plan fields that a plan and a session's plan_config answer alike, in the order both
 * documents list them (fields before it differ in type or order); plan_config words `limits` its own way.
 */
export const sharedPlanFieldsOut = {
  tool_costs: KeyedBy(Type.Number()),
  default_tool_cost: Type.Number(),
  pre_call_estimate: Type.Boolean(),
  pre_call_buffer_tokens: Type.Integer(),
  limits: Type.Array(LimitOut, { description: "Empty for a plan without windows" }),
  time_zone: Type.String({ description: "IANA time zone of the calendar windows" }),
  credits_enabled: Type.Boolean({ description: "Prepaid credits extend the period spend cap" }),
};

export const PlanBody = Type.Object({
  id: Type.String({ format: "uuid" }),
  name: Type.String(),
  max_spend_per_period: Nullable(Type.Number()),
  max_spend_per_session: Nullable(Type.Number()),
  session_timeout_minutes: Type.Number(),
  soft_gate_at: Type.Number(),
  hard_gate_at: Type.Number(),
  model_limits: KeyedBy(Type.Object({ max_tokens_per_period: Type.Integer() })),
  cost_rates: KeyedBy(CostRate),
  default_cost_rate: Nullable(CostRate),
  ...sharedPlanFieldsOut,
  credits_low_at: Nullable(Type.Number({ description: "Dollars; null: credits.low never fires" })),
  created_at: DateTime,
  updated_at: DateTime,
});

export const mapEntries = <A, B>(m: Record<string, A> | undefined, f: (a: A) => B): Record<string, B> =>
  Object.fromEntries(Object.entries(m ?? {}).map(([k, v]) => [k, f(v)]));

/**
 * The fields a plan (GET /config/plans) and a session's plan_config answer alike. The caps,
 * default_cost_rate and credits_low_at are not among them: a plan answers null for unset, a
 * plan_config leaves them out.
 */
export function sharedPlanFieldsJson(p: Plan | PlanConfig) {
  return {
    session_timeout_minutes: p.sessionTimeoutMinutes,
    soft_gate_at: p.softGateAt,
    hard_gate_at: p.hardGateAt,
    model_limits: mapEntries(p.modelLimits, (l: { maxTokensPerPeriod: bigint }) => ({ max_tokens_per_period: Number(l.maxTokensPerPeriod) })),
    cost_rates: mapEntries(p.costRates, (r: { input: number; output: number }) => ({ input: r.input, output: r.output })),
    tool_costs: { ...p.toolCosts },
    default_tool_cost: p.defaultToolCost,
    pre_call_estimate: p.preCallEstimate,
    pre_call_buffer_tokens: Number(p.preCallBufferTokens),
    limits: p.limits.map(limitJson),
    time_zone: p.timeZone,
    credits_enabled: p.creditsEnabled,
  };
}
