/** Gate evaluation, from the one rules module, typed with the library's plan config and result. */
import { evaluatePlan, type GateInput, type WindowInput } from "./rules/index.ts";
import type { GuardResult, PlanConfig } from "./types.ts";

export type { GateInput, WindowInput };

/** Every dimension of the plan (SPEC's caps and its `limits`) for one call; the deciding one named. */
export const evaluate: (plan: PlanConfig | null, u: WindowInput) => GuardResult = evaluatePlan;
