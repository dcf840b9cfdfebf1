/**
 * Cost rules of the API contract (pure). The service applies the same rules to manual
 * events; test/shared-rules.test.ts runs one table of cases against both.
 */
import { own } from "./own.ts";
import type { PlanConfig, Rate } from "./types.ts";

export type Pricing = Pick<PlanConfig, "cost_rates" | "model_limits" | "default_cost_rate" | "tool_costs" | "default_tool_cost">;

/**
 * Longest-prefix match over the keys of cost_rates and model_limits: a dated name maps to
 * the configured short name and the longer short name wins. No match: the name as is.
 */
export function normalizeModel(model: string, pricing: Pick<Pricing, "cost_rates" | "model_limits"> | null): string {
  if (!pricing) return model;
  let best = "";
  // Own keys only: `for...in` would also walk anything enumerable up the prototype chain.
  for (const key of Object.keys(pricing.cost_rates)) if (key.length > best.length && model.startsWith(key)) best = key;
  for (const key of Object.keys(pricing.model_limits)) if (key.length > best.length && model.startsWith(key)) best = key;
  return best || model;
}

/** Rates per 1K tokens of a normalized model: cost_rates, else default_cost_rate, else none. */
export function rateOf(model: string | null, pricing: Pricing | null): Rate | null {
  if (!pricing || model === null) return null;
  return own(pricing.cost_rates, model) ?? pricing.default_cost_rate ?? null;
}

export function tokenCost(inputTokens: number, outputTokens: number, rate: Rate | null): number {
  if (!rate) return 0;
  return (inputTokens / 1000) * rate.input + (outputTokens / 1000) * rate.output;
}

export function toolsCost(tools: readonly string[], pricing: Pricing | null): number {
  if (!pricing) return 0;
  let sum = 0;
  for (const tool of tools) sum += own(pricing.tool_costs, tool) ?? pricing.default_tool_cost;
  return sum;
}

export interface Priced {
  model: string | null;
  cost_tokens: number;
  cost_tools: number;
  cost_total: number;
}

/** Prices one call; without prices (a user without a plan) everything costs 0. */
export function price(
  model: string | null | undefined,
  inputTokens: number,
  outputTokens: number,
  tools: readonly string[],
  pricing: Pricing | null,
): Priced {
  const m = model ? normalizeModel(model, pricing) : null;
  const cost_tokens = tokenCost(inputTokens, outputTokens, rateOf(m, pricing));
  const cost_tools = toolsCost(tools, pricing);
  return { model: m, cost_tokens, cost_tools, cost_total: cost_tokens + cost_tools };
}

/** Input tokens of a prompt when the caller gives none: about four characters a token. */
export function estimateTokens(prompt: unknown): number {
  if (prompt === undefined || prompt === null) return 0;
  const text = typeof prompt === "string" ? prompt : JSON.stringify(prompt);
  return Math.ceil((text?.length ?? 0) / 4);
}
