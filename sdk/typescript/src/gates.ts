/** Gate evaluation, from the one rules module, typed with the library's plan config and result. */
import { evaluate as evaluateRules, type GateInput } from "./rules/index.ts";
import type { GuardResult, PlanConfig } from "./types.ts";

export type { GateInput };

export const evaluate: (plan: PlanConfig | null, u: GateInput) => GuardResult = evaluateRules;
