/** The cost rules, from the one rules module, typed with the library's plan config. */
import type { PlanConfig } from "./types.ts";

export { estimateTokens, normalizeModel, price, rateOf, tokenCost, toolsCost, type Priced } from "./rules/index.ts";

export type Pricing = Pick<PlanConfig, "cost_rates" | "model_limits" | "default_cost_rate" | "tool_costs" | "default_tool_cost">;
