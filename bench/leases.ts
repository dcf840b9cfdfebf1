// `npm run bench:leases`: budget leases across replica processes, against the real stack
// in-process (embedded database unless MONGODB_URL is set). 8 client processes x 100
// concurrent calls (BENCH_REPLICAS, BENCH_CONCURRENCY), started together, for one user.
//
// 1. The product case: a cap of BENCH_CAP_CALLS call estimates (default 100,000: a $200,000
//    cap), which the 800 calls take tens of seconds to spend, many lease round trips; with
//    leases and without (stopped at 1.1x the cap).
// 2. The sprint case: a cap of BENCH_SPRINT_CALLS estimates (default 40,000), which the 800
//    calls spend in a few seconds, a handful of round trips on a loaded machine; with leases,
//    against the spend cap and against a model's token cap.
// 3. A short run far from the cap (BENCH_FAR_CALLS calls per worker): each replica's start.
// 4. The team sprint ("team", not in the default): the sprint's cap as a team's, the replicas'
//    calls spread over BENCH_TEAM_MEMBERS (8) uncapped members, each replica starting at another.
// 5. A budget's first lease request ("first"): BENCH_FIRST_USERS (200) users on a $100 cap, one
//    request each for $0.50, one after the other on a quiet stack: what a user's first call waits.
// BENCH_CASES (default "product,sprint,far,first") runs some of them.
//
// Each run waits until the service has counted every call's event before reading the usage.
// Prints overshoot $ and tokens (target 0), the fraction of the cap used (target >= 0.99), and
// per phase (far from the cap: spend below 80% of it when the call began; near it) lease
// requests per call (target far <= 0.05) and reserve() p50/p99 (target far: p99 after each
// worker's first call <= 5 ms), beside the same figures without leases.
import { benchProduct } from "./support/bench-product.ts";
import { CALL_COST, CALL_ESTIMATE, CALL_TOKENS, CALL_TOKENS_ESTIMATE, byPhase, cappedTeam, cappedUser, cappedUserPlan, quantile, runReplicas, subscribedUser, type RunResult } from "./lease-run.ts";

const REPLICAS = Number(process.env.BENCH_REPLICAS ?? 8);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 100);
const CAP_CALLS = Number(process.env.BENCH_CAP_CALLS ?? 100_000);
const SPRINT_CALLS = Number(process.env.BENCH_SPRINT_CALLS ?? 40_000);
const FAR_CALLS = Number(process.env.BENCH_FAR_CALLS ?? 5);
const TEAM_MEMBERS = Number(process.env.BENCH_TEAM_MEMBERS ?? 8);
const FIRST_USERS = Number(process.env.BENCH_FIRST_USERS ?? 200);
/** Which of the cases below run (comma-separated): product, sprint, far, first, team. */
const CASES = (process.env.BENCH_CASES ?? "product,sprint,far,first").split(",");

const bench = await benchProduct("leases");
const { stack, apiKey, api } = bench;
const base = { baseUrl: stack.apiUrl, apiKey, replicas: REPLICAS, concurrency: CONCURRENCY, together: true };
const ms = (x: number) => x.toFixed(2);

console.log(`${REPLICAS} processes x ${CONCURRENCY} concurrent calls; a call's estimate $${CALL_ESTIMATE} / ${CALL_TOKENS_ESTIMATE} tokens, its cost $${CALL_COST} / ${CALL_TOKENS} tokens; machine shared with other work`);

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

interface Row {
  name: string;
  r: RunResult;
  /** The cap in its unit, and what a call costs in it. */
  cap: number;
  perCall: number;
  tokens: boolean;
}

/** One run until every call is refused (or `callsPerWorker`), against a spend cap or a token cap of `capCalls` estimates. */
async function run(name: string, capCalls: number, o: { leases: boolean; tokens?: boolean; callsPerWorker?: number; team?: boolean }): Promise<Row> {
  const t0 = Date.now();
  const cap = o.tokens ? capCalls * CALL_TOKENS_ESTIMATE : capCalls * CALL_ESTIMATE;
  const team = o.team ? await cappedTeam(api, cap, TEAM_MEMBERS) : undefined;
  const userId = team ? team.members[0]! : o.tokens ? await cappedUser(api, null, cap) : await cappedUser(api, cap);
  const running = runReplicas(api, { ...base, userId, team, leases: o.leases, callsPerWorker: o.callsPerWorker ?? 0 });
  const rtts = await probeLeases(userId, running);
  const r = await running;
  console.log(
    `  ${name}: ${((Date.now() - t0) / 1000).toFixed(1)} s (events counted ${(r.settleMs / 1000).toFixed(1)} s after the last replica exited); ` +
      `a lease request meanwhile (a probe asking nothing, twice a second) took p50 ${ms(quantile(rtts, 0.5))} ms, p99 ${ms(quantile(rtts, 0.99))} ms`,
  );
  return { name, r, cap, perCall: o.tokens ? CALL_TOKENS : CALL_COST, tokens: !!o.tokens };
}

const lat = (p: { latencies: number[]; warm: number[] }) => `${ms(quantile(p.latencies, 0.5))} | ${ms(quantile(p.latencies, 0.99))} | ${ms(quantile(p.warm, 0.99))}`;

function report(title: string, rows: Row[]): void {
  console.log(`\n${title}\n\n| run | calls | overshoot $ | overshoot tokens | cap used |`);
  console.log("|---|---|---|---|---|");
  for (const { name, r, cap, tokens } of rows) {
    // Overshoot from what ran (calls x cost a call) as well as what was counted.
    const spent = tokens ? Math.max(r.tokens, r.calls * CALL_TOKENS) : Math.max(r.spend, r.calls * CALL_COST);
    const over = Math.max(0, spent - cap);
    console.log(`| ${name} | ${r.calls} | ${tokens ? "-" : over.toFixed(2)} | ${tokens ? over : "-"} | ${((tokens ? r.tokens : r.spend) / cap).toFixed(3)} |`);
  }
  console.log(`\n| run | phase | calls | lease requests / call | reserve p50 ms | reserve p99 ms | p99 after each worker's first call ms |`);
  console.log("|---|---|---|---|---|---|---|");
  for (const { name, r, cap, perCall } of rows) {
    const { far, near } = byPhase(r, cap, perCall);
    const whole = { latencies: r.latencies, warm: r.warm, leaseRequests: r.leaseRequests };
    for (const [phase, p] of [["far (spend < 80% of cap)", far], ["near (spend >= 80%)", near], ["whole run", whole]] as const) {
      console.log(`| ${name} | ${phase} | ${p.latencies.length} | ${(p.leaseRequests / Math.max(1, p.latencies.length)).toFixed(4)} | ${lat(p)} |`);
    }
  }
}

/** When the calls far from the cap that waited (> 5 ms, after each worker's first) began, from the run's first call. */
function waitsByTime({ name, r, cap, perCall }: Row): void {
  const commits = r.replicas.flatMap((x) => x.committed).sort((a, b) => a - b);
  const farUntil = commits[Math.ceil((0.8 * cap) / perCall) - 1] ?? Infinity;
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
  console.log(`${name}, far from the cap: ${waited} of ${warm} calls after each worker's first waited > 5 ms; by when they began in the run: ${labels.join(", ")}`);
  // A reserve() slower than 5 ms may be a replica's process kept off the CPU (the calls without
  // leases, which never ask the service, show as much); the client's own count says which calls
  // waited for a lease answer: those each replica began to wait for after its first grant (its
  // first admitted call) until its last call far from the cap began.
  let leaseWaits = 0;
  for (const x of r.replicas) {
    if (!x.waitsAt || x.firstGrantWaits == null) continue;
    let last = x.firstGrantWaits;
    x.waitsAt.forEach((w, i) => {
      if (x.started[i]! < farUntil) last = Math.max(last, w);
    });
    leaseWaits += last - x.firstGrantWaits;
  }
  console.log(`${name}, far from the cap: ${leaseWaits} calls waited for a lease answer after their replica's first grant (target 0; the client's MeterStats.lease_waits)`);
}

// 1. The product case. Without leases each replica spends until its own view passes the cap (up to 8x it): stopped at 1.1x the cap's calls.
console.log(`\nruns (${REPLICAS * CONCURRENCY} calls at once):`);
const product = !CASES.includes("product") ? [] : [
  await run(`leases, $${CAP_CALLS * CALL_ESTIMATE} cap`, CAP_CALLS, { leases: true }),
  await run(`no leases, $${CAP_CALLS * CALL_ESTIMATE} cap`, CAP_CALLS, { leases: false, callsPerWorker: Math.ceil((1.1 * CAP_CALLS * CALL_ESTIMATE) / CALL_COST / (REPLICAS * CONCURRENCY)) }),
];
// 2. The sprint case: the far phase lasts a handful of lease round trips, shorter than the service's share rule needs to keep every replica supplied (docs/benchmarks.md).
const sprint = !CASES.includes("sprint") ? [] : [
  await run(`leases, $${SPRINT_CALLS * CALL_ESTIMATE} cap`, SPRINT_CALLS, { leases: true }),
  await run(`leases, ${SPRINT_CALLS * CALL_TOKENS_ESTIMATE} token cap`, SPRINT_CALLS, { leases: true, tokens: true }),
];

if (product.length > 0) {
  report(`Product case: a cap of ${CAP_CALLS} call estimates (the far phase lasts many lease round trips)`, product);
  waitsByTime(product[0]!);
}
if (sprint.length > 0) {
  report(`Sprint case: a cap of ${SPRINT_CALLS} call estimates (the far phase lasts a few round trips)`, sprint);
  for (const row of sprint) waitsByTime(row);
}

// 4. The team sprint: the same cap shared by the members' replicas through the team's slices.
if (CASES.includes("team")) {
  const team = await run(`leases, $${SPRINT_CALLS * CALL_ESTIMATE} team cap, ${TEAM_MEMBERS} members`, SPRINT_CALLS, { leases: true, team: true });
  report(`Team sprint: a team cap of ${SPRINT_CALLS} call estimates, ${TEAM_MEMBERS} members on uncapped plans`, [team]);
  waitsByTime(team);
}

// 3. A short run far from the cap (a cap 1000x what it spends): mostly each replica's start.
if (CASES.includes("far")) {
  const farCap = () => cappedUser(api, 1000 * REPLICAS * CONCURRENCY * FAR_CALLS * CALL_ESTIMATE);
  const far = await runReplicas(api, { ...base, userId: await farCap(), leases: true, callsPerWorker: FAR_CALLS });
  const plain = await runReplicas(api, { ...base, userId: await farCap(), leases: false, callsPerWorker: FAR_CALLS });
  console.log(`\n${FAR_CALLS} calls a worker far from the cap (${far.calls} calls): lease requests / call ${(far.leaseRequests / far.calls).toFixed(4)}`);
  console.log(`reserve p50 / p99 / p99 after each worker's first call, ms: leases ${lat(far).replaceAll(" | ", " / ")}; without ${lat(plain).replaceAll(" | ", " / ")}`);
}

// 5. A budget's first lease request, far from its cap, on a quiet stack.
if (CASES.includes("first")) {
  const { userId: first, planId } = await cappedUserPlan(api, 100);
  const users = [first];
  for (let i = 1; i < FIRST_USERS; i++) users.push(await subscribedUser(api, planId));
  const timed = async (holder: string) => {
    const took: number[] = [];
    for (const userId of users) {
      const t0 = performance.now();
      const res = await api.post(`/users/${userId}/leases`, { holder, need: 0.01, want: 0.5 });
      took.push(performance.now() - t0);
      if (res.status !== 200 || res.body.lease?.added !== 0.5) throw new Error(`a lease request answered ${res.status} ${JSON.stringify(res.body)}`);
    }
    return `p50 ${ms(quantile(took, 0.5))} ms, p99 ${ms(quantile(took, 0.99))} ms`;
  };
  const alone = await timed("h1");
  // The same budgets again, another holder's first request: what is left is the request's own cost.
  const again = await timed("h2");
  console.log(`\nA budget's first lease request ($0.50 of a $100 cap, ${FIRST_USERS} users one after the other): ${alone}; a second holder's right after: ${again}`);
}

await bench.close();
process.exit(0);
