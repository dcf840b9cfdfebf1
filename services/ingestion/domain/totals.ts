import { sumByName } from "@meter/lib/own";
import { toNano } from "@meter/rules";
import { encodeKey } from "./field-keys.ts";

/** A counter's sums. Money in whole nano-dollars (see money in @meter/rules). */
export interface Totals {
  cost: number;
  tokens: number;
  tool_calls: number;
  events: number;
  tokens_by_model: Record<string, number>;
  cost_by_model: Record<string, number>;
}

/** What of a usage event a counter adds up. */
export interface Countable {
  product_id: string;
  user_id: string;
  model: string | null;
  /** The model the counters file the event under when it is not `model` (counter-bounds.ts). */
  counted_model?: string;
  total_tokens: number;
  cost_total: number;
  tool_call_count: number;
}

export function sum(events: readonly Countable[]): Totals {
  const add: Totals = { cost: 0, tokens: 0, tool_calls: 0, events: 0, tokens_by_model: {}, cost_by_model: {} };
  // By model in Maps: model names are the caller's ("constructor", "__proto__").
  const tokens = new Map<string, number>();
  const cost = new Map<string, number>();
  for (const e of events) {
    const nano = toNano(e.cost_total);
    add.cost += nano;
    add.tokens += e.total_tokens;
    add.tool_calls += e.tool_call_count;
    add.events += 1;
    const model = e.counted_model ?? e.model;
    if (model !== null) {
      const key = encodeKey(model);
      tokens.set(key, (tokens.get(key) ?? 0) + e.total_tokens);
      cost.set(key, (cost.get(key) ?? 0) + nano);
    }
  }
  add.tokens_by_model = Object.fromEntries(tokens);
  add.cost_by_model = Object.fromEntries(cost);
  return add;
}

/** -t: what taking events out of a counter adds to it. */
export function negate(t: Totals): Totals {
  const flip = (m: Record<string, number>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, -v]));
  return {
    cost: -t.cost,
    tokens: -t.tokens,
    tool_calls: -t.tool_calls,
    events: -t.events,
    tokens_by_model: flip(t.tokens_by_model),
    cost_by_model: flip(t.cost_by_model),
  };
}

/** a + b, either possibly absent (usage of a month: its own counter and a period's share). */
export function plus(a: Totals | null | undefined, b: Totals | null | undefined): Totals | null {
  if (!a || !b) return a ?? b ?? null;
  return {
    cost: a.cost + b.cost,
    tokens: a.tokens + b.tokens,
    tool_calls: a.tool_calls + b.tool_calls,
    events: a.events + b.events,
    tokens_by_model: sumByName(a.tokens_by_model, b.tokens_by_model),
    cost_by_model: sumByName(a.cost_by_model, b.cost_by_model),
  };
}
