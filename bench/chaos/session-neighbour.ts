// One product's ingestion burst beside another product's session reads (`npm start`, embedded
// database): product B reads sessions of its 20 users from 2 clients for 8 s alone, then 8 s
// while product A posts batches of 500 usage events from 16 clients at once, from a process
// of its own (bench/support/burst-generator.ts) so that B's timings do not include building A's batches.
// Run with the fair share of time (INGESTION_PRODUCT_SHARE, default 0.5) and without it (0),
// each at the per-product concurrency limits of BENCH_NEIGHBOUR_LIMITS (default 4), several
// rounds alternating (BENCH_NEIGHBOUR_ROUNDS, default 2) since the machine's load drifts.
// A's burst also runs alone first (8 s). Target: B's session p99 with the burst within 2x of
// without; A alone keeps its throughput.
import { readFileSync } from "node:fs";
import os from "node:os";
import { Receiver } from "../../services/webhooks/testing/receiver.ts";
import { chaosProduct, childPids } from "../../test/support/chaos.ts";
import { spawnEntry, startAllInOne } from "../../test/support/processes.ts";
import { CHAOS_ENV, withScene } from "../support/chaos.ts";

const READ_MS = Number(process.env.BENCH_NEIGHBOUR_MS ?? 8_000);
const BURST_CLIENTS = 16;
const BATCH = 500;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

/** CPU seconds (user + system) a process has used so far (Linux /proc). */
function cpuSeconds(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}

/** The service process's event-loop lag since its previous scrape (prom-client resets it on each). */
async function loopLag(base: string): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const read = (name: string) => Number(text.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1] ?? NaN) * 1000;
  return { p99: read("nodejs_eventloop_lag_p99_seconds"), max: read("nodejs_eventloop_lag_max_seconds") };
}

/** Product A's burst, from a process of its own (bench/support/burst-generator.ts) until `ms` have passed. */
function burst(api: string, key: string, ms: number): Promise<{ accepted: number; refused: number; statuses: Record<string, number> }> {
  const gen = spawnEntry("bench/support/burst-generator.ts", {
    BURST_API: api,
    BURST_KEY: key,
    BURST_MS: String(ms),
    BURST_CLIENTS: String(BURST_CLIENTS),
    BURST_BATCH: String(BATCH),
  });
  return new Promise((resolve, reject) =>
    gen.child.once("exit", (code) => {
      const line = gen.output().trim().split("\n").pop() ?? "";
      if (code === 0) resolve(JSON.parse(line));
      else reject(new Error(`burst generator exited ${code}: ${gen.output()}`));
    }),
  );
}

async function run(limit: string, share: string, dir: string, rx: Receiver) {
  const aio = await startAllInOne({ MONGODB_URL: undefined, DATA_DIR: dir, ...CHAOS_ENV, INGESTION_PRODUCT_CONCURRENCY: limit, INGESTION_PRODUCT_SHARE: share });
  try {
    const b = await chaosProduct(aio.api, rx, 20);
    const aKey = (await aio.api.post("/products", { name: "Burst" })).body.api_key;
    for (const u of b.users) await b.api.get(`/users/${u}/session`); // first reads (plans cache, database cache)
    const service = aio.proc.child.pid!;
    const db = childPids(service, ""); // the embedded database
    const cpu = () => ({ service: cpuSeconds(service), db: db.reduce((s, p) => s + cpuSeconds(p), 0) });
    const sessions = async (until: number, out: number[]) => {
      for (let i = 0; Date.now() < until; i++) {
        const t = performance.now();
        const res = await b.api.get(`/users/${b.users[i % b.users.length]}/session`);
        if (res.status !== 200) throw new Error(`session ${res.status}`);
        out.push(performance.now() - t);
      }
    };
    const phase = async (work: (until: number) => Promise<unknown>[]) => {
      await loopLag(aio.rpcBase);
      const before = cpu();
      const until = Date.now() + READ_MS;
      await Promise.all(work(until));
      const after = cpu();
      const lag = await loopLag(aio.rpcBase);
      const secs = READ_MS / 1000;
      return `service loop lag p99 ${lag.p99.toFixed(0)} ms max ${lag.max.toFixed(0)} ms; CPU service ${((after.service - before.service) / secs).toFixed(2)} db ${((after.db - before.db) / secs).toFixed(2)} cores`;
    };
    // A alone first: with no neighbour being served, the fair share must not slow it.
    const aAlone = await burst(aio.api.baseUrl, aKey, READ_MS);
    const alone: number[] = [];
    const aloneLoad = await phase((until) => [sessions(until, alone), sessions(until, alone)]);

    const busy: number[] = [];
    const [a, busyLoad] = await Promise.all([
      burst(aio.api.baseUrl, aKey, READ_MS),
      phase((until) => [sessions(until, busy), sessions(until, busy)]),
    ]);
    const f = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(1)} ms  p99 ${pct(xs, 99).toFixed(1)} ms  (${xs.length} reads)`;
    console.log(`INGESTION_PRODUCT_CONCURRENCY=${limit} INGESTION_PRODUCT_SHARE=${share}  (load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")})`);
    console.log(`  B's sessions alone:          ${f(alone)}`);
    console.log(`    ${aloneLoad}`);
    console.log(`  B's sessions beside A burst: ${f(busy)}  -> p99 x${(pct(busy, 99) / pct(alone, 99)).toFixed(2)}`);
    console.log(`    ${busyLoad}`);
    console.log(`  A's burst alone: ${Math.round(aAlone.accepted / (READ_MS / 1000))} events/s accepted`);
    console.log(`  A's burst beside B: ${Math.round(a.accepted / (READ_MS / 1000))} events/s accepted, ${a.refused} batches refused ${JSON.stringify(a.statuses)}`);
  } finally {
    await aio.proc.stop();
  }
}

export default async function (): Promise<void> {
  const list = (name: string, dflt: string) => (process.env[name] ?? dflt).split(",");
  for (let round = 0; round < Number(process.env.BENCH_NEIGHBOUR_ROUNDS ?? 2); round++) {
    for (const limit of list("BENCH_NEIGHBOUR_LIMITS", "4")) {
      for (const share of list("BENCH_NEIGHBOUR_SHARES", "0.5,0")) await withScene((dir, rx) => run(limit, share, dir, rx));
    }
  }
}
