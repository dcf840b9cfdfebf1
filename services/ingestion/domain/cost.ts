/** Cost rules of the API contract, as pure functions over a plan's prices. */

export interface Rate {
  input: number;
  output: number;
}

export interface Pricing {
  costRates: Record<string, Rate>;
  modelLimits: Record<string, unknown>;
  defaultCostRate?: Rate;
  toolCosts: Record<string, number>;
  defaultToolCost: number;
}

/**
 * Longest-prefix match of a model name over the keys of cost_rates and model_limits, so that
 * a dated name ("gpt-4o-2024-08-06") maps to the configured short name ("gpt-4o") and the
 * longer short name wins on overlaps. A name no key matches is kept as is. Only the plan's
 * own keys count: a model named "constructor" or "__proto__" finds nothing inherited.
 */
export function normalizeModel(model: string, pricing: Pick<Pricing, "costRates" | "modelLimits"> | null): string {
  // Object.keys lists own keys only.
  if (!pricing) return model;
  let best = "";
  for (const key of [...Object.keys(pricing.costRates), ...Object.keys(pricing.modelLimits)]) {
    if (key.length > best.length && model.startsWith(key)) best = key;
  }
  return best || model;
}

/** A price by name, from the plan's own keys only. */
function priceOf<V>(prices: Readonly<Record<string, V>>, name: string): V | undefined {
  return Object.hasOwn(prices, name) ? prices[name] : undefined;
}

export function tokenCost(inputTokens: number, outputTokens: number, rate: Rate): number {
  return (inputTokens / 1000) * rate.input + (outputTokens / 1000) * rate.output;
}

export interface ManualCostInput {
  cost?: number;
  model?: string;
  inputTokens: number;
  outputTokens: number;
  toolCalls: readonly string[];
}

export interface ManualCost {
  model: string | null;
  costTokens: number;
  costTools: number;
  costTotal: number;
}

/**
 * An explicit cost is used as given. Otherwise tokens are priced from cost_rates of the
 * normalized model, else default_cost_rate, and each tool call from tool_costs, else
 * default_tool_cost. Without prices (no plan) the event is a zero-cost audit entry.
 */
export function manualCost(input: ManualCostInput, pricing: Pricing | null): ManualCost {
  const model = input.model ? normalizeModel(input.model, pricing) : null;
  if (input.cost !== undefined) {
    return { model, costTokens: input.cost, costTools: 0, costTotal: input.cost };
  }
  if (!pricing) return { model, costTokens: 0, costTools: 0, costTotal: 0 };
  const rate = model ? (priceOf(pricing.costRates, model) ?? pricing.defaultCostRate) : undefined;
  const costTokens = rate ? tokenCost(input.inputTokens, input.outputTokens, rate) : 0;
  const costTools = input.toolCalls.reduce((sum, tool) => sum + (priceOf(pricing.toolCosts, tool) ?? pricing.defaultToolCost), 0);
  return { model, costTokens, costTools, costTotal: costTokens + costTools };
}
