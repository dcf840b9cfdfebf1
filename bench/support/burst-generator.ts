// Product A's burst for bench/chaos/session-neighbour.ts, as a process of its own so that
// building and posting its batches does not take CPU from the process that times B's reads.
// Env: BURST_API (REST base), BURST_KEY, BURST_MS, BURST_CLIENTS, BURST_BATCH. Prints one JSON
// line, { accepted, refused, statuses }, when done.
import { randomUUID } from "node:crypto";
import { Api } from "../../test/support/http.ts";

const api = new Api(process.env.BURST_API!, process.env.BURST_KEY!);
const until = Date.now() + Number(process.env.BURST_MS);
const clients = Number(process.env.BURST_CLIENTS ?? 16);
const batch = Number(process.env.BURST_BATCH ?? 500);
let accepted = 0;
let refused = 0;
const statuses: Record<number, number> = {};

async function client() {
  while (Date.now() < until) {
    const events = Array.from({ length: batch }, (_, i) => ({
      id: randomUUID(),
      user_id: `burst-${i % 50}`,
      timestamp: new Date().toISOString(),
      model: "gpt-4.1",
      input_tokens: 100,
      output_tokens: 10,
      cost_total: 0.001,
    }));
    const res = await api.post("/events/batch", events);
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    if (res.status === 200) accepted += res.body.accepted;
    else {
      refused++;
      // As the clients do: wait what Retry-After says before the next batch.
      const after = Number(res.headers.get("retry-after") ?? 1);
      await new Promise((r) => setTimeout(r, Math.min(after, 5) * 1000));
    }
  }
}

await Promise.all(Array.from({ length: clients }, client));
console.log(JSON.stringify({ accepted, refused, statuses }));
