// One product's ingestion burst beside another product's session reads (`npm start`, embedded
// database): product B reads sessions of its 20 users from 2 clients for 8 s alone, then 8 s
// while product A posts batches of 500 usage events from 16 clients at once. Run with the
// per-product write limit (INGESTION_PRODUCT_CONCURRENCY, default 4) and without it (0).
// Target: B's session p99 with the burst within 2x of without.
import { randomUUID } from "node:crypto";
import { Receiver } from "../../services/webhooks/testing/receiver.ts";
import { chaosProduct } from "../../test/support/chaos.ts";
import { startAllInOne } from "../../test/support/processes.ts";
import { CHAOS_ENV, withScene } from "../support/chaos.ts";

const READ_MS = Number(process.env.BENCH_NEIGHBOUR_MS ?? 8_000);
const BURST_CLIENTS = 16;
const BATCH = 500;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

async function run(limit: string, dir: string, rx: Receiver) {
  const aio = await startAllInOne({ MONGODB_URL: undefined, DATA_DIR: dir, ...CHAOS_ENV, INGESTION_PRODUCT_CONCURRENCY: limit });
  try {
    const b = await chaosProduct(aio.api, rx, 20);
    const a = aio.api.withKey((await aio.api.post("/products", { name: "Burst" })).body.api_key);
    for (const u of b.users) await b.api.get(`/users/${u}/session`); // first reads (plans cache, database cache)
    const sessions = async (until: number, out: number[]) => {
      for (let i = 0; Date.now() < until; i++) {
        const t = performance.now();
        const res = await b.api.get(`/users/${b.users[i % b.users.length]}/session`);
        if (res.status !== 200) throw new Error(`session ${res.status}`);
        out.push(performance.now() - t);
      }
    };
    const alone: number[] = [];
    let until = Date.now() + READ_MS;
    await Promise.all([sessions(until, alone), sessions(until, alone)]);

    const busy: number[] = [];
    let accepted = 0;
    let refused = 0;
    until = Date.now() + READ_MS;
    const burst = async () => {
      while (Date.now() < until) {
        const events = Array.from({ length: BATCH }, (_, i) => ({
          id: randomUUID(),
          user_id: `burst-${i % 50}`,
          timestamp: new Date().toISOString(),
          model: "gpt-4.1",
          input_tokens: 100,
          output_tokens: 10,
          cost_total: 0.001,
        }));
        const res = await a.post("/events/batch", events);
        if (res.status === 200) accepted += res.body.accepted;
        else refused++;
      }
    };
    await Promise.all([sessions(until, busy), sessions(until, busy), ...Array.from({ length: BURST_CLIENTS }, burst)]);
    const f = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(1)} ms  p99 ${pct(xs, 99).toFixed(1)} ms  (${xs.length} reads)`;
    console.log(`INGESTION_PRODUCT_CONCURRENCY=${limit}`);
    console.log(`  B's sessions alone:          ${f(alone)}`);
    console.log(`  B's sessions beside A burst: ${f(busy)}  -> p99 x${(pct(busy, 99) / pct(alone, 99)).toFixed(2)}`);
    console.log(`  A's burst: ${Math.round(accepted / (READ_MS / 1000))} events/s accepted, ${refused} batches refused`);
  } finally {
    await aio.proc.stop();
  }
}

export default async function (): Promise<void> {
  for (const limit of (process.env.BENCH_NEIGHBOUR_LIMITS ?? "4,0").split(",")) await withScene((dir, rx) => run(limit, dir, rx));
}
