/** Cost rules of the API (pure; docs/api.md): model-name normalization, token and tool prices of a plan. */
import { toDollars, toNano, tokenCostNano } from "./money.ts";
import type { Rate } from "./plans.ts";

/** A plan's prices, as the API names them. */
export interface Pricing {
  cost_rates: Readonly<Record<string, Rate>>;
  /** Only the keys count here (for normalization). */
  model_limits: Readonly<Record<string, unknown>>;
  default_cost_rate?: Rate | null;
  tool_costs: Readonly<Record<string, number>>;
  default_tool_cost: number;
}

/**
 * Only the record's own keys count: a model or tool named "constructor", "toString" or
 * "__proto__" must not find Object.prototype's members.
 */
function own<V>(record: Readonly<Record<string, V>>, key: string): V | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/**
 * Longest-prefix match over the keys of cost_rates and model_limits: a dated name
 * ("gpt-4o-2024-08-06") maps to the configured short name ("gpt-4o") and the longer short
 * name wins on overlaps. No match: the name as is.
 */
export function normalizeModel(model: string, pricing: Pick<Pricing, "cost_rates" | "model_limits"> | null): string {
  if (!pricing) return model;
  let best = "";
  // Object.keys lists own keys only.
  for (const key of Object.keys(pricing.cost_rates)) if (key.length > best.length && model.startsWith(key)) best = key;
  for (const key of Object.keys(pricing.model_limits)) if (key.length > best.length && model.startsWith(key)) best = key;
  return best || model;
}

/** Rates per 1K tokens of a normalized model: cost_rates, else default_cost_rate, else none. */
export function rateOf(model: string | null, pricing: Pricing | null): Rate | null {
  if (!pricing || model === null) return null;
  return own(pricing.cost_rates, model) ?? pricing.default_cost_rate ?? null;
}

/**
 * Dollars of a call's tokens, exact at the unit (money.ts): rates taken to nano-dollars per 1K
 * tokens, then input x rate + output x rate rounded once to the nano-dollar.
 */
export function tokenCost(inputTokens: number, outputTokens: number, rate: Rate | null): number {
  return toDollars(tokenCostNanoOf(inputTokens, outputTokens, rate));
}

function tokenCostNanoOf(inputTokens: number, outputTokens: number, rate: Rate | null): number {
  if (!rate) return 0;
  return tokenCostNano(inputTokens, outputTokens, toNano(rate.input), toNano(rate.output));
}

/** Dollars of a call's tool calls, summed as whole nano-dollars. */
export function toolsCost(tools: readonly string[], pricing: Pricing | null): number {
  return toDollars(toolsCostNano(tools, pricing));
}

function toolsCostNano(tools: readonly string[], pricing: Pricing | null): number {
  if (!pricing) return 0;
  let sum = 0;
  for (const tool of tools) sum += toNano(own(pricing.tool_costs, tool) ?? pricing.default_tool_cost);
  return sum;
}

export interface Priced {
  model: string | null;
  cost_tokens: number;
  cost_tools: number;
  cost_total: number;
}

/**
 * Prices one call, each amount exact at the nano-dollar (money.ts). An explicit `cost` (a
 * manual event's) is used as given, rounded to the unit; without prices (a user without a
 * plan) everything costs 0.
 */
export function price(
  model: string | null | undefined,
  inputTokens: number,
  outputTokens: number,
  tools: readonly string[],
  pricing: Pricing | null,
  cost?: number,
): Priced {
  const m = model ? normalizeModel(model, pricing) : null;
  if (cost !== undefined) {
    const given = toDollars(toNano(cost));
    return { model: m, cost_tokens: given, cost_tools: 0, cost_total: given };
  }
  const tokens = tokenCostNanoOf(inputTokens, outputTokens, rateOf(m, pricing));
  const toolsNano = toolsCostNano(tools, pricing);
  return { model: m, cost_tokens: toDollars(tokens), cost_tools: toDollars(toolsNano), cost_total: toDollars(tokens + toolsNano) };
}

/** Input tokens of a prompt when the caller gives none: about four characters a token. */
export function estimateTokens(prompt: unknown): number {
  if (prompt === undefined || prompt === null) return 0;
  const text = typeof prompt === "string" ? prompt : JSON.stringify(prompt);
  return Math.ceil((text?.length ?? 0) / 4);
}
