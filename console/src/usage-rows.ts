import type { Usage } from "./api/client.ts";

const NO_MODEL = "(no model)";

/** A model as the console names it: analytics files events without a model under "unknown", said here as on the user pages. */
export const modelLabel = (model: string | null | undefined) => (!model || model === "unknown" ? NO_MODEL : model);
const nanos = (dollars: number) => Math.round(dollars * 1e9);

/**
 * The rows of the usage by model: each model's, and what the totals hold beyond them (events
 * recorded without a model: manual events with a cost), so that the rows add up to the totals.
 */
export function byModel(u: Usage): { label: string; model: boolean; cost: number; tokens: number }[] {
  const rows = Object.keys({ ...u.cost_by_model, ...u.tokens_by_model }).map((m) => ({ label: m, model: true, cost: u.cost_by_model[m] ?? 0, tokens: u.tokens_by_model[m] ?? 0 }));
  // Summed in nano-dollars, the service's unit: a float sum would leave a stray fraction of a cent.
  const cost = (nanos(u.total_cost) - rows.reduce((a, r) => a + nanos(r.cost), 0)) / 1e9;
  const tokens = u.total_tokens - rows.reduce((a, r) => a + r.tokens, 0);
  if (cost > 0 || tokens > 0) rows.push({ label: NO_MODEL, model: false, cost: Math.max(0, cost), tokens: Math.max(0, tokens) });
  return rows;
}
