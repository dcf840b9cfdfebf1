import { evaluatePlan, type DimensionResult } from "./dimensions.ts";

/**
 * Gate evaluation (pure) of a plan's SPEC caps: period spend, session spend, the call's model's
 * tokens, as a list of dimensions (dimensions.ts holds the rule).
 */

/** The settings a gate reads, as the API names them (null caps: unlimited). */
export interface GatePlan {
  max_spend_per_period: number | null;
  max_spend_per_session: number | null;
  soft_gate_at: number;
  hard_gate_at: number;
  model_limits: Readonly<Record<string, { max_tokens_per_period: number }>>;
}

/** What evaluatePlan answers, without `resets_at` (the three caps alone: period, session, model). */
export type GateResult = Omit<DimensionResult, "resets_at">;

/** What a guard checks: usage so far (committed plus reserved) and the estimate of the coming call. */
export interface GateInput {
  periodCost: number;
  sessionCost: number;
  /** Normalized model of the call, or null. */
  model: string | null;
  /** Tokens of that model this period. */
  modelTokens: number;
  /** Estimated cost and tokens of the coming call (0 without pre_call_estimate). */
  estimateCost: number;
  estimateTokens: number;
}

const NO_COUNTERS: never[] = [];

/**
 * SPEC's three caps of a plan (dimensions.ts evaluates them): reaching `hard_gate_at` of a cap
 * blocks; with an estimate, so does a call whose estimate would take usage past it. Without
 * resets the choice among several is the highest usage, as it always was.
 */
export function evaluate(plan: GatePlan | null, u: GateInput): GateResult {
  const { resets_at: _, ...result } = evaluatePlan(plan, { ...u, periodEnd: null, sessionEnd: null, counters: NO_COUNTERS });
  return result;
}
