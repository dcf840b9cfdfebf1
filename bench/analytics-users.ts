// `npm run bench:analytics-users`: the overview's per-user REST calls (summary, top users) at
// console scale in a minute instead of bench:console's quarter hour (or more on a busy
// machine). Day roll-ups are written with the roller's own store function (RollupStore.write)
// in the shape bench:console's ingestion gives them: BENCH_USERS users (100,000), BENCH_DAYS
// days (90), BENCH_DAY_USERS distinct users a day (6,500: 1,000,000 events in batches over 100
// random users), into an all-in-one process as `npm start` runs it; then p50/p95 of each call
// through the REST gateway, the first (cold) call apart. BENCH_TODAY_EVERY=n rewrites today's
// roll-up before every n-th call, as the roller does on a product taking events.
// BENCH_RESTARTS=n (default 0) then restarts the stack n times per route (the all-in-one, and
// the embedded database on its port when no MONGODB_URL is given) and times the first call of
// that route as soon as health answers: p50/p95/max beside the target (300 ms).
// BENCH_TEAMS=n (default 0) puts user i in team `team-<i mod n>`: each day is then written with
// its teams' scopes too (the write time shows their cost), and the team routes are timed beside
// the others (one team's summary, breakdown and top users; top teams).
//   BENCH_USERS=100000 BENCH_DAYS=90 BENCH_DAY_USERS=6500 BENCH_SAMPLES=50 npm run bench:analytics-users
//   BENCH_SAMPLES=0 BENCH_RESTARTS=4 npm run bench:analytics-users
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startEmbeddedDb } from "@meter/lib/embedded-db";
import { connectMongo } from "@meter/lib/mongo";
import { startAllInOne } from "../test/support/processes.ts";
import { DayAccumulator } from "../services/analytics/domain/rollup.ts";
import { RollupStore } from "../services/analytics/store/rollups.ts";
import { pct } from "./support/stats.ts";
import { SEED_MODELS, random } from "./support/seed-events.ts";

const USERS = Number(process.env.BENCH_USERS ?? 100_000);
const DAYS = Number(process.env.BENCH_DAYS ?? 90);
const DAY_USERS = Number(process.env.BENCH_DAY_USERS ?? 6_500);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 50);
const TODAY_EVERY = Number(process.env.BENCH_TODAY_EVERY ?? 0);
const RESTARTS = Number(process.env.BENCH_RESTARTS ?? 0);
const TEAMS = Number(process.env.BENCH_TEAMS ?? 0);
const teamOf = (u: number) => (TEAMS > 0 ? { tm: `team-${String(u % TEAMS).padStart(4, "0")}` } : {});
const FIRST_CALL_TARGET_MS = 300;
const DAY = 86_400_000;

const dir = process.env.MONGODB_URL ? undefined : await mkdtemp(path.join(os.tmpdir(), "meter-bench-users-"));
let embedded = dir ? await startEmbeddedDb(dir) : undefined;
const mongoUrl = process.env.MONGODB_URL ?? embedded!.url;
const dbPrefix = `bench_analytics_users_${Date.now()}`;
const env = { MONGODB_URL: mongoUrl, MONGODB_DB_PREFIX: dbPrefix, WEBHOOKS_ALLOW_INSECURE_URLS: "true" };
let { proc, api: anon } = await startAllInOne(env);
const mongo = await connectMongo(mongoUrl);
const product = await anon.post("/products", { name: "bench analytics users" });
if (product.status !== 201) throw new Error(`product: ${product.status}`);
const productId: string = product.body.id;
const apiKey: string = product.body.api_key;
let api = anon.withKey(apiKey);
const rollups = new RollupStore(mongo.db(`${dbPrefix}_analytics`));
const today = Math.floor(Date.now() / DAY) * DAY;

/** One day's figures: DAY_USERS distinct users, each with one to three events. */
function dayFigures() {
  const acc = new DayAccumulator();
  const who = new Set<number>();
  while (who.size < Math.min(DAY_USERS, USERS)) who.add(random(USERS));
  let i = 0;
  for (const u of who) {
    for (let k = random(3); k >= 0; k--) {
      const input = 200 + random(4_000);
      const output = 50 + random(1_000);
      acc.usage({ u: `user-${String(u).padStart(6, "0")}`, m: SEED_MODELS[random(SEED_MODELS.length)]!, s: i++ % 10 === 0 ? "manual" : "auto", t: input + output, c: Math.round(input * 0.002 + output * 0.008) / 1000, ...teamOf(u) });
    }
  }
  return acc.result();
}

const t0 = performance.now();
let rows = 0;
for (let d = 0; d < DAYS; d++) {
  const f = dayFigures();
  rows += f.users.length;
  await rollups.write(productId, new Date(today - d * DAY).toISOString().slice(0, 10), f, new Date());
}
console.log(`${DAYS} days, ${rows} user-days (${Math.round(rows / DAYS)} a day) written in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

const TEAM_ROUTES = ["summary?days=30&team_id=team-0000", "breakdown?days=30&team_id=team-0000", "top-users?days=30&limit=10&team_id=team-0000", "top-teams?days=30&limit=10", "top-teams?days=90&limit=10"];
if (TEAMS > 0 && (await api.post("/teams", { external_team_id: "team-0000", name: "bench team" })).status !== 201) throw new Error("team");
const ROUTES = ["summary?days=30", "top-users?days=30&limit=10", "summary?days=90", "top-users?days=90&limit=10", "summary?days=365", ...(TEAMS > 0 ? TEAM_ROUTES : [])];
const CALLS: [string, () => Promise<unknown>][] = ROUTES.map((r) => [
  r,
  async () => {
    const res = await api.get(`/analytics/${r}`);
    if (res.status !== 200) throw new Error(`${r}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
  },
]);
if (SAMPLES > 0) console.log(`GET /analytics/...            cold ms   p50 ms   p95 ms   (${SAMPLES} sequential calls${TODAY_EVERY ? `, today rewritten every ${TODAY_EVERY}` : ""}; load ${os.loadavg().map((l) => l.toFixed(1)).join(" ")})`);
for (const [name, call] of SAMPLES > 0 ? CALLS : []) {
  const c = performance.now();
  await call();
  const cold = performance.now() - c;
  const ms: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    if (TODAY_EVERY && i % TODAY_EVERY === 0) await rollups.write(productId, new Date(today).toISOString().slice(0, 10), dayFigures(), new Date());
    const q = performance.now();
    await call();
    ms.push(performance.now() - q);
  }
  ms.sort((a, b) => a - b);
  console.log(`${name.padEnd(28)}${cold.toFixed(1).padStart(9)}${pct(ms, 50).toFixed(1).padStart(9)}${pct(ms, 95).toFixed(1).padStart(9)}`);
}
if (RESTARTS > 0) {
  // As the console did before the restart: every route called once (a window asked before).
  for (const [, call] of CALLS) await call();
  // Each route's first call after a restart, timed from the moment health answers (the
  // roller may still be starting beside it, as after any deploy). A call that fails counts
  // as failed, with its time.
  const first = new Map<string, number[]>(ROUTES.map((r) => [r, []]));
  // The same call again at once: what the window's read costs without the new process's first request.
  const second = new Map<string, number[]>(ROUTES.map((r) => [r, []]));
  const failed: string[] = [];
  const starts: number[] = [];
  for (let round = 0; round < RESTARTS; round++) {
    for (const r of ROUTES) {
      await proc.stop("SIGTERM");
      const s = performance.now();
      if (embedded) {
        await embedded.stop();
        embedded = await startEmbeddedDb(dir!, { port: Number(new URL(embedded.url).port) });
      }
      ({ proc, api: anon } = await startAllInOne(env));
      starts.push(performance.now() - s);
      api = anon.withKey(apiKey);
      const c = performance.now();
      const res = await api.get(`/analytics/${r}`);
      const ms = performance.now() - c;
      first.get(r)!.push(ms);
      if (res.status !== 200) failed.push(`${r}: ${res.status} after ${ms.toFixed(0)} ms`);
      const c2 = performance.now();
      await api.get(`/analytics/${r}`);
      const ms2 = performance.now() - c2;
      second.get(r)!.push(ms2);
      console.log(`round ${round + 1}, ${r}: first call ${ms.toFixed(1)} ms (${res.status}), second ${ms2.toFixed(1)} ms`);
    }
  }
  starts.sort((a, b) => a - b);
  console.log(
    `\nfirst call after a restart (${RESTARTS} restarts per route; start to health p50 ${(pct(starts, 50) / 1000).toFixed(1)} s, max ${(starts.at(-1)! / 1000).toFixed(1)} s; load ${os.loadavg().map((l) => l.toFixed(1)).join(" ")})`,
  );
  console.log(`GET /analytics/...             p50 ms   p95 ms   max ms   (second call p50, max)   target p95 <= ${FIRST_CALL_TARGET_MS} ms`);
  const all: number[] = [];
  for (const [name, ms] of first) {
    ms.sort((a, b) => a - b);
    all.push(...ms);
    const again = second.get(name)!.sort((a, b) => a - b);
    console.log(
      `${name.padEnd(28)}${pct(ms, 50).toFixed(1).padStart(9)}${pct(ms, 95).toFixed(1).padStart(9)}${ms.at(-1)!.toFixed(1).padStart(9)}   (${pct(again, 50).toFixed(1)}, ${again.at(-1)!.toFixed(1)})`,
    );
  }
  all.sort((a, b) => a - b);
  const p95 = pct(all, 95);
  const met = p95 <= FIRST_CALL_TARGET_MS && failed.length === 0;
  console.log(`every route: p95 ${p95.toFixed(1)} ms, ${failed.length} failed${failed.length ? ` (${failed.join("; ")})` : ""}; target p95 <= ${FIRST_CALL_TARGET_MS} ms: ${met ? "met" : "NOT met"}`);
}
await proc.stop("SIGTERM");
await mongo.close();
await embedded?.stop();
if (dir) await rm(dir, { recursive: true, force: true });
