// `npm run bench:leases`: budget leases across replica processes, against the real stack
// in-process (embedded database unless MONGODB_URL is set). 8 client processes x 100
// concurrent calls (BENCH_REPLICAS, BENCH_CONCURRENCY) against one user's cap of
// BENCH_CAP_CALLS call estimates, with and without leases; the leased run again against a
// model's token cap instead; then a run far from the cap (BENCH_FAR_CALLS calls per worker)
// for lease requests per call. Prints overshoot (target 0), the fraction of the cap spent
// before every call was refused (target >= 0.95), lease requests per call far from the cap
// (target <= 0.05), and reserve() latency p50/p99 with and without leases.
import { benchProduct } from "./support/bench-product.ts";
import { CALL_ESTIMATE, CALL_TOKENS_ESTIMATE, cappedUser, quantile, runReplicas, type RunResult } from "./lease-run.ts";

const REPLICAS = Number(process.env.BENCH_REPLICAS ?? 8);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 100);
const CAP_CALLS = Number(process.env.BENCH_CAP_CALLS ?? 8_000);
const FAR_CALLS = Number(process.env.BENCH_FAR_CALLS ?? 5);

const bench = await benchProduct("leases");
const { stack, apiKey, api } = bench;
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
const lat = (r: RunResult) => `${ms(quantile(r.latencies, 0.5))} | ${ms(quantile(r.latencies, 0.99))} | ${ms(quantile(r.warm, 0.99))}`;
const head = "| lease requests / call | reserve p50 ms | reserve p99 ms | p99 after each worker's first call ms |";
console.log(`\n| mode | calls | spend $ | overshoot $ | cap spent ${head}`);
console.log("|---|---|---|---|---|---|---|---|---|");
for (const [name, r] of rows) {
  const over = Math.max(0, r.spend - cap);
  console.log(`| ${name} | ${r.calls} | ${r.spend.toFixed(2)} | ${over.toFixed(2)} | ${(r.spend / cap).toFixed(3)} | ${(r.leaseRequests / r.calls).toFixed(4)} | ${lat(r)} |`);
}

// The same against a model's token cap (no spend cap), with leases.
const tokenCap = CAP_CALLS * CALL_TOKENS_ESTIMATE;
const tok = await runReplicas(api, { ...base, userId: await cappedUser(api, null, tokenCap), leases: true });
console.log(`\ntoken cap of ${tokenCap} tokens of one model, leases: ${tok.calls} calls, ${tok.tokens} tokens, overshoot ${Math.max(0, tok.tokens - tokenCap)} tokens, cap used ${(tok.tokens / tokenCap).toFixed(3)}, lease requests / call ${(tok.leaseRequests / tok.calls).toFixed(4)}, reserve p50/p99/p99 after first ms ${lat(tok).replaceAll(" | ", " / ")}`);

// Far from the cap: a cap 1000x what the run spends.
const farCap = () => cappedUser(api, 1000 * REPLICAS * CONCURRENCY * FAR_CALLS * CALL_ESTIMATE);
const far = await runReplicas(api, { ...base, userId: await farCap(), leases: true, callsPerWorker: FAR_CALLS });
const plain = await runReplicas(api, { ...base, userId: await farCap(), leases: false, callsPerWorker: FAR_CALLS });
console.log(`\nfar from the cap (${far.calls} calls): lease requests / call ${(far.leaseRequests / far.calls).toFixed(4)}`);
console.log(`reserve p50 / p99 / p99 after each worker's first call, ms: leases ${lat(far).replaceAll(" | ", " / ")}; without ${lat(plain).replaceAll(" | ", " / ")}`);

await bench.close();
process.exit(0);
