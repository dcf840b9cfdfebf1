// `npm run bench:idle`: what an idle all-in-one costs. Starts the embedded database and an
// all-in-one process on it as `npm start` runs them, optionally seeds BENCH_EVENTS usage events
// (default 0) over BENCH_USERS users (100) stamped over BENCH_DAYS days (30) through the public
// batch route, then sends nothing more: from the last request it prints the CPU of both
// processes (from /proc/<pid>/stat) every BENCH_SAMPLE_S seconds (10), and the figure: node and
// database CPU over BENCH_MEASURE_S seconds (60) starting BENCH_QUIET_S seconds (120) after the
// last request, beside the target (0.02 core together). With BENCH_SETTLE_MAX_S (default 0) it
// keeps sampling after that, up to that long, until a whole window is within the target, and
// says when. BENCH_COUNT_COMMANDS=1 also prints the MongoDB commands the all-in-one sent per
// minute (by collection) from the last request on, from a driver preload
// (bench/support/count-commands.ts). Last, one
// event is sent and the time until the analytics summary counts it is printed.
//   npm run bench:idle
//   BENCH_EVENTS=100000 BENCH_SETTLE_MAX_S=900 npm run bench:idle
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import pMap from "p-map";
import { startEmbeddedDb } from "@meter/lib/embedded-db";
import { startAllInOne } from "../test/support/processes.ts";
import { SEED_MODELS, postSeedBatch, random, seedEvent } from "./support/seed-events.ts";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 0);
const USERS = Number(process.env.BENCH_USERS ?? 100);
const DAYS = Number(process.env.BENCH_DAYS ?? 30);
const QUIET_S = Number(process.env.BENCH_QUIET_S ?? 120);
const MEASURE_S = Number(process.env.BENCH_MEASURE_S ?? 60);
const SAMPLE_S = Number(process.env.BENCH_SAMPLE_S ?? 10);
const SETTLE_MAX_S = Number(process.env.BENCH_SETTLE_MAX_S ?? 0);
const COUNT_COMMANDS = process.env.BENCH_COUNT_COMMANDS === "1";
const TARGET_CORE = 0.02;
const BATCH = 10_000;

const log = (m: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${m}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** CPU time (user + system) a process has used so far, in seconds. */
async function cpuSeconds(pid: number): Promise<number> {
  const f = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / 100; // utime, stime: clock ticks of 10 ms
}

const dir = await mkdtemp(path.join(os.tmpdir(), "meter-bench-idle-"));
const db = await startEmbeddedDb(dir);
const preload = pathToFileURL(path.resolve(import.meta.dirname, "support/count-commands.ts")).href;
const { proc, api: anon } = await startAllInOne({
  MONGODB_URL: db.url,
  MONGODB_DB_PREFIX: `bench_idle_${Date.now()}`,
  LOG_LEVEL: "warn",
  ...(COUNT_COMMANDS ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import ${preload}` } : {}),
});
const pids = { node: proc.child.pid!, database: db.pid! };

try {
  const product = await anon.post("/products", { name: "bench idle" });
  if (product.status !== 201) throw new Error(`product: ${product.status}`);
  const api = anon.withKey(product.body.api_key);
  // The user of the probe event at the end.
  if (EVENTS === 0) await api.post("/users", { external_user_id: "user-0" });
  if (EVENTS > 0) {
    const t0 = performance.now();
    await pMap(Array.from({ length: USERS }, (_, u) => u), (u) => api.post("/users", { external_user_id: `user-${u}` }), { concurrency: 8 });
    const span = DAYS * 86_400_000 - 600_000;
    await pMap(
      Array.from({ length: Math.ceil(EVENTS / BATCH) }, (_, b) => b),
      async (b) => {
        const body = Array.from({ length: Math.min(BATCH, EVENTS - b * BATCH) }, () => seedEvent(`user-${random(USERS)}`, span));
        await postSeedBatch(api, body, `batch ${b}`);
        if ((b + 1) % 10 === 0) log(`${(b + 1) * BATCH} events`);
      },
      { concurrency: 3 },
    );
    log(`seeded ${USERS} users and ${EVENTS} events over ${DAYS} days in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
  // From here on nothing is sent to the service until the figures are taken.
  const last = performance.now();
  const commandLines = () => proc.output().split("\n").filter((l) => l.startsWith("COMMANDS/MIN"));
  const commandsBefore = COUNT_COMMANDS ? commandLines().length : 0;
  log(`last request; sampling every ${SAMPLE_S} s (cores: node + database)`);
  const read = async () => ({ at: performance.now(), node: await cpuSeconds(pids.node), database: await cpuSeconds(pids.database) });
  const cores = (a: Awaited<ReturnType<typeof read>>, b: Awaited<ReturnType<typeof read>>) => {
    const s = (b.at - a.at) / 1000;
    return { node: (b.node - a.node) / s, database: (b.database - a.database) / s };
  };
  const fmt = (c: { node: number; database: number }) => `${(c.node + c.database).toFixed(3)} (${c.node.toFixed(3)} + ${c.database.toFixed(3)})`;
  const samples: Awaited<ReturnType<typeof read>>[] = [await read()];
  const sampleUntil = async (until: number) => {
    // The last sample ends the window (give or take half a second), never a sliver after it.
    while (until - performance.now() > 500) {
      await sleep(Math.min(SAMPLE_S * 1000, until - performance.now()));
      samples.push(await read());
      const [a, b] = samples.slice(-2) as [Awaited<ReturnType<typeof read>>, Awaited<ReturnType<typeof read>>];
      log(`${((b.at - last) / 1000).toFixed(0).padStart(5)} s after the last request: ${fmt(cores(a, b))}`);
    }
  };
  await sampleUntil(last + QUIET_S * 1000);
  const start = samples.at(-1)!;
  await sampleUntil(last + (QUIET_S + MEASURE_S) * 1000);
  const figure = cores(start, samples.at(-1)!);
  const total = figure.node + figure.database;
  console.log(
    `\nidle CPU ${QUIET_S}-${QUIET_S + MEASURE_S} s after the last request (${EVENTS} events seeded): ` +
      `${total.toFixed(3)} core (node ${figure.node.toFixed(3)}, database ${figure.database.toFixed(3)}); ` +
      `target <= ${TARGET_CORE} core: ${total <= TARGET_CORE ? "met" : "NOT met"}; load average ${os.loadavg()[0]!.toFixed(1)}`,
  );
  if (SETTLE_MAX_S > 0 && total > TARGET_CORE) {
    // The first window of MEASURE_S seconds, from the last request on, within the target.
    const end = last + SETTLE_MAX_S * 1000;
    let settled: number | undefined;
    for (;;) {
      const b = samples.at(-1)!;
      const a = samples.findLast((s) => s.at <= b.at - MEASURE_S * 1000 + 1);
      if (a) {
        const c = cores(a, b);
        if (c.node + c.database <= TARGET_CORE) {
          settled = (a.at - last) / 1000;
          break;
        }
      }
      if (performance.now() >= end) break;
      await sampleUntil(Math.min(end, performance.now() + SAMPLE_S * 1000));
    }
    console.log(
      settled === undefined
        ? `not within ${TARGET_CORE} core over any ${MEASURE_S} s within ${SETTLE_MAX_S} s of the last request`
        : `within ${TARGET_CORE} core from ${settled.toFixed(0)} s after the last request`,
    );
  }
  if (COUNT_COMMANDS) {
    // The first minute counted may have begun before the last request.
    const lines = commandLines().slice(commandsBefore);
    console.log(`MongoDB commands of the all-in-one per minute from the last request on (${lines.length} minutes):`);
    for (const [i, l] of lines.entries()) console.log(`  minute ${i + 1}: ${l.slice("COMMANDS/MIN ".length) || "(none)"}`);
  }
  if (EVENTS > 0) {
    const s = await api.get(`/analytics/summary?days=${DAYS + 1}`);
    log(`afterwards: the ${DAYS + 1}-day summary shows ${s.body.total_events} of ${EVENTS} events`);
  }
  // Resting must not make work late: one event after the idle minutes, and how long until
  // the analytics summary counts it (ingestion's relay, then the roll-up).
  const before = (await api.get(`/analytics/summary?days=${DAYS + 1}`)).body.total_events as number;
  const sent = performance.now();
  const res = await api.post("/events/batch", [
    { id: randomUUID(), user_id: "user-0", timestamp: new Date().toISOString(), model: SEED_MODELS[0], input_tokens: 10, output_tokens: 5, total_tokens: 15, cost_tokens: 0.001, cost_total: 0.001 },
  ]);
  if (res.status !== 200) throw new Error(`probe event: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  for (;;) {
    if (((await api.get(`/analytics/summary?days=${DAYS + 1}`)).body.total_events as number) > before) break;
    if (performance.now() - sent > 120_000) throw new Error("the probe event did not reach the analytics summary within 2 minutes");
    await sleep(10);
  }
  console.log(`one event sent after the idle minutes: in the analytics summary ${(performance.now() - sent).toFixed(0)} ms after it was sent`);
} finally {
  await proc.stop();
  await db.stop();
  await rm(dir, { recursive: true, force: true });
}
