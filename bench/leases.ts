// `npm run bench:leases`: budget leases across replica processes, against the real stack
// in-process (embedded database unless MONGODB_URL is set). 8 client processes x 100
// concurrent calls (BENCH_REPLICAS, BENCH_CONCURRENCY), started together, against one user's
// cap of BENCH_CAP_CALLS call estimates (a cap many lease round trips long), with leases and
// without (stopped at 1.5x the cap); the leased run again against a
// model's token cap instead; then a short run far from the cap (BENCH_FAR_CALLS calls per
// worker: mostly each replica's start). Prints overshoot (target 0), the fraction of the cap
// spent before every call was refused (target >= 0.99), and per phase of the run (far from the
// cap: spend below 80% of it when the call began; near it) lease requests per call (target far
// from the cap <= 0.05) and reserve() latency p50/p99 (target far from the cap: p99 after each
// worker's first call <= 5 ms), beside the same figures without leases.
import { benchProduct } from "./support/bench-product.ts";
import { CALL_COST, CALL_ESTIMATE, CALL_TOKENS, CALL_TOKENS_ESTIMATE, byPhase, cappedUser, quantile, runReplicas, type RunResult } from "./lease-run.ts";

const REPLICAS = Number(process.env.BENCH_REPLICAS ?? 8);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 100);
const CAP_CALLS = Number(process.env.BENCH_CAP_CALLS ?? 40_000);
const FAR_CALLS = Number(process.env.BENCH_FAR_CALLS ?? 5);

const bench = await benchProduct("leases");
const { stack, apiKey, api } = bench;
const cap = CAP_CALLS * CALL_ESTIMATE;
const base = { baseUrl: stack.apiUrl, apiKey, replicas: REPLICAS, concurrency: CONCURRENCY, together: true };
const ms = (x: number) => x.toFixed(2);

console.log(`${REPLICAS} processes x ${CONCURRENCY} concurrent calls, cap $${cap} (${CAP_CALLS} call estimates of $${CALL_ESTIMATE}); machine shared with other work`);
const rows: [string, RunResult][] = [];

/** Round trips of a lease request asking nothing for `userId` (no write), every 500 ms until `run` ends: what the replicas' requests meet. */
async function probeLeases(userId: string, run: Promise<unknown>): Promise<number[]> {
  let done = false;
  void run.finally(() => (done = true)).catch(() => {});
  const rtts: number[] = [];
  while (!done) {
    const t0 = performance.now();
    await api.post(`/users/${userId}/leases`, { holder: "probe", need: 0, want: 0 });
    rtts.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 500));
  }
  return rtts;
}
for (const leases of [true, false]) {
  const t0 = Date.now();
  // Without leases each replica spends until its own view passes the cap (up to 8x it): stopped at 1.5x the cap's calls.
  const callsPerWorker = leases ? 0 : Math.ceil((1.5 * cap) / CALL_COST / (REPLICAS * CONCURRENCY));
  const userId = await cappedUser(api, cap);
  const run = runReplicas(api, { ...base, userId, leases, callsPerWorker });
  const rtts = await probeLeases(userId, run);
  const r = await run;
  rows.push([leases ? "leases" : "no leases", r]);
  console.log(`  ${leases ? "leases   " : "no leases"}  ${((Date.now() - t0) / 1000).toFixed(1)} s; a lease request meanwhile (a probe asking nothing, twice a second) took p50 ${ms(quantile(rtts, 0.5))} ms, p99 ${ms(quantile(rtts, 0.99))} ms`);
}
const lat = (r: { latencies: number[]; warm: number[] }) => `${ms(quantile(r.latencies, 0.5))} | ${ms(quantile(r.latencies, 0.99))} | ${ms(quantile(r.warm, 0.99))}`;
console.log(`\n| mode | calls | spend $ | overshoot $ | cap spent |`);
console.log("|---|---|---|---|---|");
for (const [name, r] of rows) {
  // Overshoot from what ran (calls x cost a call) as well as what was settled, in case delivery lagged.
  const ran = Math.max(r.spend, r.calls * CALL_COST);
  console.log(`| ${name} | ${r.calls} | ${r.spend.toFixed(2)} | ${Math.max(0, ran - cap).toFixed(2)} | ${(r.spend / cap).toFixed(3)} |`);
}

/** Latency by phase: far from the cap (spend below 80% of it when the call began), near it, whole run. */
function phases(rs: [string, RunResult][], capOf: number, perCall: number): void {
  console.log(`\n| mode | phase | calls | lease requests / call | reserve p50 ms | reserve p99 ms | p99 after each worker's first call ms |`);
  console.log("|---|---|---|---|---|---|---|");
  for (const [name, r] of rs) {
    const { far, near } = byPhase(r, capOf, perCall);
    const whole = { latencies: r.latencies, warm: r.warm, leaseRequests: r.leaseRequests };
    for (const [phase, p] of [["far (spend < 80% of cap)", far], ["near (spend >= 80%)", near], ["whole run", whole]] as const) {
      console.log(`| ${name} | ${phase} | ${p.latencies.length} | ${(p.leaseRequests / Math.max(1, p.latencies.length)).toFixed(4)} | ${lat(p)} |`);
    }
  }
}
phases(rows, cap, CALL_COST);
waitsByTime(rows[0]![1], cap, CALL_COST);

/** When the calls far from the cap that waited (> 5 ms, after each worker's first) began, from the run's first call. */
function waitsByTime(r: RunResult, capOf: number, perCall: number): void {
  const commits = r.replicas.flatMap((x) => x.committed).sort((a, b) => a - b);
  const farUntil = commits[Math.ceil((0.8 * capOf) / perCall) - 1] ?? Infinity;
  const t0 = Math.min(...r.replicas.map((x) => x.started[0] ?? Infinity));
  const buckets = [1, 2, 5, 10, Infinity].map((s) => ({ s, n: 0 }));
  let warm = 0;
  for (const x of r.replicas) {
    x.latencies.forEach((ms, i) => {
      if (!x.warmAt[i] || x.started[i]! >= farUntil) return;
      warm++;
      if (ms > 5) buckets.find((b) => x.started[i]! - t0 < b.s * 1000)!.n++;
    });
  }
  const waited = buckets.reduce((a, b) => a + b.n, 0);
  const labels = buckets.map((b, i) => `${i === 0 ? 0 : buckets[i - 1]!.s}-${b.s === Infinity ? "end" : b.s} s: ${b.n}`);
  console.log(`\nleases, far from the cap: ${waited} of ${warm} calls after each worker's first waited > 5 ms; by when they began in the run: ${labels.join(", ")}`);
}

// The same against a model's token cap (no spend cap), with leases.
const tokenCap = CAP_CALLS * CALL_TOKENS_ESTIMATE;
const tok = await runReplicas(api, { ...base, userId: await cappedUser(api, null, tokenCap), leases: true });
const ran = Math.max(tok.tokens, tok.calls * CALL_TOKENS);
console.log(`\ntoken cap of ${tokenCap} tokens of one model, leases: ${tok.calls} calls, ${tok.tokens} tokens settled, overshoot ${Math.max(0, ran - tokenCap)} tokens, cap used ${(tok.tokens / tokenCap).toFixed(3)}`);
phases([["leases, token cap", tok]], tokenCap, CALL_TOKENS);

// A short run far from the cap (a cap 1000x what it spends): mostly each replica's start.
const farCap = () => cappedUser(api, 1000 * REPLICAS * CONCURRENCY * FAR_CALLS * CALL_ESTIMATE);
const far = await runReplicas(api, { ...base, userId: await farCap(), leases: true, callsPerWorker: FAR_CALLS });
const plain = await runReplicas(api, { ...base, userId: await farCap(), leases: false, callsPerWorker: FAR_CALLS });
console.log(`\n${FAR_CALLS} calls a worker far from the cap (${far.calls} calls): lease requests / call ${(far.leaseRequests / far.calls).toFixed(4)}`);
console.log(`reserve p50 / p99 / p99 after each worker's first call, ms: leases ${lat(far).replaceAll(" | ", " / ")}; without ${lat(plain).replaceAll(" | ", " / ")}`);

await bench.close();
process.exit(0);
