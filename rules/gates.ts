import { evaluatePlan, type DimensionResult, type GateInput, type GatePlan } from "./dimensions.ts";

export type { GateInput, GatePlan };

/**
 * Gate evaluation (pure) of a plan's SPEC caps: period spend, session spend, the call's model's
 * tokens, as a list of dimensions (dimensions.ts holds the rule).
 */

/** What evaluatePlan answers, without `resets_at` (the three caps alone: period, session, model). */
export type GateResult = Omit<DimensionResult, "resets_at">;

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
