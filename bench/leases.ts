// `npm run bench:leases`: budget leases across replica processes, against the real stack
// in-process (embedded database unless MONGODB_URL is set). 8 client processes x 100
// concurrent calls (BENCH_REPLICAS, BENCH_CONCURRENCY) against one user's cap of
// BENCH_CAP_CALLS call estimates, with and without leases; then a run far from the cap
// (BENCH_FAR_CALLS calls per worker) for lease requests per call. Prints overshoot in dollars
// (target 0), the fraction of the cap spent before every call was refused (target >= 0.95),
// lease requests per call far from the cap (target <= 0.05), and reserve() latency p50/p99.
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startEmbeddedDb } from "@meter/lib/embedded-db";
import { createLogger } from "@meter/lib/logger";
import { startStack } from "../cmd/stack.ts";
import { Api } from "../test/support/http.ts";
import { CALL_ESTIMATE, cappedUser, quantile, runReplicas, type RunResult } from "./lease-run.ts";

const REPLICAS = Number(process.env.BENCH_REPLICAS ?? 8);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 100);
const CAP_CALLS = Number(process.env.BENCH_CAP_CALLS ?? 8_000);
const FAR_CALLS = Number(process.env.BENCH_FAR_CALLS ?? 5);

const dir = process.env.MONGODB_URL ? undefined : await mkdtemp(path.join(os.tmpdir(), "meter-bench-leases-"));
const embedded = dir ? await startEmbeddedDb(dir) : undefined;
const stack = await startStack({ mongoUrl: process.env.MONGODB_URL ?? embedded!.url, dbPrefix: `blease${Date.now()}`, logger: createLogger("bench", "fatal") });
const created = await new Api(stack.apiUrl).post("/products", { name: "bench leases" });
const apiKey: string = created.body.api_key;
const api = new Api(stack.apiUrl, apiKey);
const cap = CAP_CALLS * CALL_ESTIMATE;
const base = { baseUrl: stack.apiUrl, apiKey, replicas: REPLICAS, concurrency: CONCURRENCY };
const ms = (x: number) => x.toFixed(2);

console.log(`${REPLICAS} processes x ${CONCURRENCY} concurrent calls, cap $${cap} (${CAP_CALLS} call estimates of $${CALL_ESTIMATE}); machine shared with other work`);
const rows: [string, RunResult][] = [];
for (const leases of [true, false]) {
  const t0 = Date.now();
  const r = await runReplicas(api, { ...base, userId: await cappedUser(api, cap), leases });
  rows.push([leases ? "leases" : "no leases", r]);
  console.log(`  ${leases ? "leases   " : "no leases"}  ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}
console.log("\n| mode | calls | spend $ | overshoot $ | cap spent | lease requests / call | reserve p50 ms | reserve p99 ms |");
console.log("|---|---|---|---|---|---|---|---|");
for (const [name, r] of rows) {
  const over = Math.max(0, r.spend - cap);
  console.log(`| ${name} | ${r.calls} | ${r.spend.toFixed(2)} | ${over.toFixed(2)} | ${(r.spend / cap).toFixed(3)} | ${(r.leaseRequests / r.calls).toFixed(4)} | ${ms(quantile(r.latencies, 0.5))} | ${ms(quantile(r.latencies, 0.99))} |`);
}

// Far from the cap: a cap 1000x what the run spends.
const far = await runReplicas(api, { ...base, userId: await cappedUser(api, 1000 * REPLICAS * CONCURRENCY * FAR_CALLS * CALL_ESTIMATE), leases: true, callsPerWorker: FAR_CALLS });
const plain = await runReplicas(api, { ...base, userId: await cappedUser(api, 1000 * REPLICAS * CONCURRENCY * FAR_CALLS * CALL_ESTIMATE), leases: false, callsPerWorker: FAR_CALLS });
console.log(`\nfar from the cap (${far.calls} calls): lease requests / call ${(far.leaseRequests / far.calls).toFixed(4)}; reserve p50/p99 ms: leases ${ms(quantile(far.latencies, 0.5))} / ${ms(quantile(far.latencies, 0.99))}, without ${ms(quantile(plain.latencies, 0.5))} / ${ms(quantile(plain.latencies, 0.99))}`);

await stack.close();
await embedded?.stop();
process.exit(0);
