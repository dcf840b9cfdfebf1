/** Gate evaluation, from the one rules module, typed with the library's plan config and result. */
import { evaluatePlan, type GateInput, type TeamWindowInput, type WindowInput } from "./rules/index.ts";
import type { GuardResult, PlanConfig } from "./types.ts";

export type { GateInput, TeamWindowInput, WindowInput };

/** Every dimension of the plan (SPEC's caps and its `limits`) and of the member's team plan (`team`) for one call; the deciding one named. */
export const evaluate: (plan: PlanConfig | null, u: WindowInput, team?: TeamWindowInput | null) => GuardResult = evaluatePlan;
