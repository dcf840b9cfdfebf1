// One client replica for the budget-lease test and benchmark: a Meter (the SDK) making
// LEASE_CONCURRENCY concurrent model calls for one user, each with a pre-call estimate,
// until refused for LEASE_STOP_AFTER_MS in a row (or LEASE_CALLS calls per worker). Prints
// one JSON line of figures. LEASE_USERS=<id,id,...> instead spreads the calls over several users (each call the next one's). LEASE_UNTIL_MINUTE_PLUS=<ms> runs until that long into the next minute instead. LEASE_TOGETHER=true prints "ready" once set up and begins on SIGUSR2. LEASE_MODE=hold takes one reservation, prints "held" and waits
// (to be killed while holding a lease).
import { LimitExceededError, Meter } from "../sdk/typescript/src/index.ts";

const env = (k: string, d?: string) => process.env[k] ?? d ?? (() => { throw new Error(`${k} is required`); })();
const users = (process.env.LEASE_USERS ?? env("LEASE_USER")).split(",");
const userId = users[0]!;
let turn = 0;
/** The user of the next call (one user unless LEASE_USERS names several). */
const nextUser = () => users[turn++ % users.length]!;
const concurrency = Number(env("LEASE_CONCURRENCY", "100"));
const callsPerWorker = Number(env("LEASE_CALLS", "0")) || Infinity;
const stopAfterMs = Number(env("LEASE_STOP_AFTER_MS", "1500"));
const leases = env("LEASE_ON", "true") === "true";
/** When set, the workers run until this many ms past the start of the minute after they began (not until refused). */
const untilMinutePlus = process.env.LEASE_UNTIL_MINUTE_PLUS === undefined ? null : Number(process.env.LEASE_UNTIL_MINUTE_PLUS);
const call = { model: "m", input_tokens: 1000 };
/** LEASE_TOOL=<name>: each call also used this tool (priced by the plan's tool_costs: a plan without cost rates still costs). */
const used = { input_tokens: 1000, output_tokens: 500, ...(process.env.LEASE_TOOL ? { tool_calls: [process.env.LEASE_TOOL] } : {}) };

const meter = new Meter({
  apiKey: env("METER_API_KEY"),
  baseURL: env("METER_BASE_URL"),
  leases,
  leaseTtlMs: Number(env("LEASE_TTL_MS", "60000")),
  leaseIdleMs: Number(env("LEASE_IDLE_MS", "300")),
  flushIntervalMs: 200,
  // On a busy machine the user's view and the last deliveries take seconds: wait for them rather than measure a replica that failed open.
  startupTimeoutMs: 30_000,
  // Every call's event is kept and delivered (a replica queues up to its calls' worth while the
  // loaded service counts them slower than 800 calls come), so the settled usage is the run's.
  maxQueueSize: 1_000_000,
  shutdownTimeoutMs: 600_000,
  logger: { warn: () => {} },
});
await meter.start();

if (env("LEASE_MODE", "run") === "hold") {
  await meter.reserve(userId, call);
  process.stdout.write("held\n");
  await new Promise(() => setInterval(() => {}, 1_000));
}

if (env("LEASE_TOGETHER", "false") === "true") {
  // Started with others: the user's view is loaded here, then every replica begins at once on SIGUSR2.
  for (const u of users) {
    await meter.guard(u, { model: "m" });
    if ((meter.state(u)?.plan ?? "none") === "none") throw new Error(`the view of ${u} did not load`);
  }
  const alive = setInterval(() => {}, 1_000); // a signal handler alone keeps no process alive
  const go = new Promise((r) => process.once("SIGUSR2", r));
  process.stdout.write("ready\n");
  await go;
  clearInterval(alive);
}

const latencies: number[] = [];
let calls = 0;
let refused = 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** reserve() latencies after each worker's first call (which also waits for the session load). */
const warm: number[] = [];
/** Per latency: when the reserve() began (epoch ms, comparable across processes), whether it was warm, and the lease requests sent by then. */
const started: number[] = [];
const warmAt: boolean[] = [];
const requestsAt: number[] = [];
/** Per latency: the calls that had begun to wait for a lease answer (MeterStats.lease_waits) when the reserve() began. */
const waitsAt: number[] = [];
/** The same when the replica's first call was admitted (its first grant): the calls that waited for it. */
let firstGrantWaits: number | null = null;
/** When each call was committed (epoch ms): with the other replicas', the user's spend at any time. */
const committed: number[] = [];
/** When each call was admitted (its reserve() returned; epoch ms), and the gate reasons of refused calls. */
const admitted: number[] = [];
const reasons = new Set<string>();
const epoch = () => performance.timeOrigin + performance.now();
const began = Date.now();
const until = untilMinutePlus === null ? Infinity : began - (began % 60_000) + 60_000 + untilMinutePlus;

async function worker(): Promise<void> {
  let refusedSince: number | null = null;
  for (let n = 0; n < callsPerWorker && Date.now() < until; ) {
    const t0 = performance.now();
    // One read of the stats (an object built per read), inside the timed call as before.
    const { lease_requests: asked = 0, lease_waits: waits = 0 } = meter.stats;
    try {
      const r = await meter.reserve(nextUser(), call);
      admitted.push(epoch());
      latencies.push(performance.now() - t0);
      firstGrantWaits ??= meter.stats.lease_waits ?? 0;
      waitsAt.push(waits);
      started.push(performance.timeOrigin + t0);
      warmAt.push(n > 0);
      requestsAt.push(asked);
      if (n > 0) warm.push(latencies.at(-1)!);
      refusedSince = null;
      await sleep(2 + Math.random() * 8); // the model call
      await r.commit(used);
      committed.push(epoch());
      calls++;
      n++;
    } catch (err) {
      if (!(err instanceof LimitExceededError)) throw err;
      refused++;
      reasons.add(`${err.result.gate_reason} ${err.result.resets_at}`);
      refusedSince ??= Date.now();
      if (untilMinutePlus === null && Date.now() - refusedSince >= stopAfterMs) return;
      await sleep(100);
    }
  }
}

await Promise.all(Array.from({ length: concurrency }, worker));
const stats = meter.stats;
// Whether every event was delivered (false: some were still queued at the timeout, or dropped).
const delivered = (await meter.shutdown()) && meter.stats.dropped === 0 && meter.stats.rejected === 0;
// Exit only once the (large) line is written to the pipe.
process.stdout.write(JSON.stringify({ calls, refused, delivered, lease_requests: stats.lease_requests ?? 0, latencies, warm, started, warmAt, requestsAt, waitsAt, firstGrantWaits, committed, admitted, reasons: [...reasons] }) + "\n", () => process.exit(0));
