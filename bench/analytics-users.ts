// `npm run bench:analytics-users`: the overview's per-user REST calls (summary, top users) at
// console scale in a minute instead of bench:console's quarter hour (or more on a busy
// machine). Day roll-ups are written with the roller's own store function (RollupStore.write)
// in the shape bench:console's ingestion gives them: BENCH_USERS users (100,000), BENCH_DAYS
// days (90), BENCH_DAY_USERS distinct users a day (6,500: 1,000,000 events in batches over 100
// random users), into an all-in-one process as `npm start` runs it; then p50/p95 of each call
// through the REST gateway, the first (cold) call apart. BENCH_TODAY_EVERY=n rewrites today's
// roll-up before every n-th call, as the roller does on a product taking events.
//   BENCH_USERS=100000 BENCH_DAYS=90 BENCH_DAY_USERS=6500 BENCH_SAMPLES=50 npm run bench:analytics-users
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
const DAY = 86_400_000;

const dir = process.env.MONGODB_URL ? undefined : await mkdtemp(path.join(os.tmpdir(), "meter-bench-users-"));
const embedded = dir ? await startEmbeddedDb(dir) : undefined;
const mongoUrl = process.env.MONGODB_URL ?? embedded!.url;
const dbPrefix = `bench_analytics_users_${Date.now()}`;
const { proc, api: anon } = await startAllInOne({ MONGODB_URL: mongoUrl, MONGODB_DB_PREFIX: dbPrefix, WEBHOOKS_ALLOW_INSECURE_URLS: "true" });
const mongo = await connectMongo(mongoUrl);
const product = await anon.post("/products", { name: "bench analytics users" });
if (product.status !== 201) throw new Error(`product: ${product.status}`);
const productId: string = product.body.id;
const api = anon.withKey(product.body.api_key);
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
      acc.usage({ u: `user-${String(u).padStart(6, "0")}`, m: SEED_MODELS[random(SEED_MODELS.length)]!, s: i++ % 10 === 0 ? "manual" : "auto", t: input + output, c: Math.round(input * 0.002 + output * 0.008) / 1000 });
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

const ROUTES = ["summary?days=30", "top-users?days=30&limit=10", "summary?days=90", "top-users?days=90&limit=10", "summary?days=365"];
const CALLS: [string, () => Promise<unknown>][] = ROUTES.map((r) => [
  r,
  async () => {
    const res = await api.get(`/analytics/${r}`);
    if (res.status !== 200) throw new Error(`${r}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
  },
]);
console.log(`GET /analytics/...            cold ms   p50 ms   p95 ms   (${SAMPLES} sequential calls${TODAY_EVERY ? `, today rewritten every ${TODAY_EVERY}` : ""}; load ${os.loadavg().map((l) => l.toFixed(1)).join(" ")})`);
for (const [name, call] of CALLS) {
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
await proc.stop("SIGTERM");
await mongo.close();
await embedded?.stop();
if (dir) await rm(dir, { recursive: true, force: true });
