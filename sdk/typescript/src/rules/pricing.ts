/** Cost rules of SPEC.md (pure): model-name normalization, token and tool prices of a plan. */
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

/**
 * Prices one call. An explicit `cost` (a manual event's) is used as given; without prices
 * (a user without a plan) everything costs 0.
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
  if (cost !== undefined) return { model: m, cost_tokens: cost, cost_tools: 0, cost_total: cost };
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
