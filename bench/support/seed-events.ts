// Seeding a product with usage history, as the benchmarks that measure a loaded product do.
import { randomUUID } from "node:crypto";
import type { Api } from "../../test/support/http.ts";

export const SEED_MODELS = ["gpt-4.1", "gpt-4.1-mini", "gpt-4o", "claude-sonnet-4", "o3"];

export const random = (n: number) => Math.floor(Math.random() * n);

/** A usage event of `userId` at a random time in the `spanMs` before the last 5 minutes, with a random model and size. */
export function seedEvent(userId: string, spanMs: number) {
  const input = 200 + random(4_000);
  const output = 50 + random(1_000);
  const cost = Math.round(input * 0.002 + output * 0.008) / 1000;
  return {
    id: randomUUID(),
    user_id: userId,
    timestamp: new Date(Date.now() - 300_000 - random(spanMs)).toISOString(),
    model: SEED_MODELS[random(SEED_MODELS.length)],
    input_tokens: input,
    output_tokens: output,
    total_tokens: input + output,
    cost_tokens: cost,
    cost_total: cost,
  };
}

/**
 * POST /events/batch (or `route`) until it is accepted: a loaded service sheds a batch with 503
 * or 429, which a seed retries after a second. Answers how many times it retried.
 */
export async function postSeedBatch(api: Api, body: readonly object[], label: string, route = "/events/batch"): Promise<number> {
  for (let retries = 0; ; retries++) {
    const res = await api.post(route, body);
    if (res.status === 200) return retries;
    if (res.status !== 503 && res.status !== 429) throw new Error(`${label}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

const BATCH_MODELS = ["gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet", "o1"];

/** A batch for POST /events/batch as bench:scale sends it: `n` events over `users` in turn, four models, $0.001 each. */
export function usageBatch(users: readonly string[], n: number, sessionId: string) {
  return Array.from({ length: n }, (_, j) => ({
    id: randomUUID(),
    user_id: users[j % users.length],
    session_id: sessionId,
    timestamp: new Date().toISOString(),
    model: BATCH_MODELS[j % BATCH_MODELS.length],
    input_tokens: 100 + (j % 900),
    output_tokens: 20 + (j % 300),
    cost_tokens: 0.001,
    cost_tools: 0,
    cost_total: 0.001,
  }));
}
