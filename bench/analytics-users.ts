// `npm run bench:analytics-users`: the per-user queries (summary, top users) at console scale
// in a minute instead of bench:console's quarter hour. Day roll-ups are written with the
// roller's own store function (RollupStore.write) in the shape bench:console's ingestion gives
// them: BENCH_USERS users (100,000), BENCH_DAYS days (90), BENCH_DAY_USERS distinct users a day
// (6,500: 1,000,000 events in batches over 100 random users), then p50/p95 of each call over
// gRPC, first call (cold) apart. BENCH_TODAY_EVERY=n rewrites today's roll-up before every
// n-th call, as the roller does on a product taking events.
//   BENCH_USERS=100000 BENCH_DAYS=90 BENCH_DAY_USERS=6500 BENCH_SAMPLES=50 npm run bench:analytics-users
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { startEmbeddedDb } from "@meter/lib/embedded-db";
import { createLogger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { rpcClient, serveRpc } from "@meter/lib/rpc";
import { createAnalyticsService } from "../services/analytics/index.ts";
import { DayAccumulator } from "../services/analytics/domain/rollup.ts";
import { RollupStore } from "../services/analytics/store/rollups.ts";

const USERS = Number(process.env.BENCH_USERS ?? 100_000);
const DAYS = Number(process.env.BENCH_DAYS ?? 90);
const DAY_USERS = Number(process.env.BENCH_DAY_USERS ?? 6_500);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 50);
const TODAY_EVERY = Number(process.env.BENCH_TODAY_EVERY ?? 0);
const DAY = 86_400_000;
const MODELS = ["gpt-4.1", "gpt-4.1-mini", "gpt-4o", "claude-sonnet-4", "o3"];

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
const random = (n: number) => Math.floor(Math.random() * n);
const logger = createLogger("bench", "warn");
const dir = process.env.MONGODB_URL ? undefined : await mkdtemp(path.join(os.tmpdir(), "meter-bench-users-"));
const embedded = dir ? await startEmbeddedDb(dir) : undefined;
const mongo = await connectMongo(process.env.MONGODB_URL ?? embedded!.url);
const db = mongo.db(`bench_analytics_users_${Date.now()}`);
const module = await createAnalyticsService({
  db,
  logger,
  peers: { tenancy: "", plans: "", ingestion: "", analytics: "", webhooks: "" },
  rollIntervalMs: 0,
  plans: { countSubscribers: async () => [] },
});
const server = await serveRpc({ modules: [module], port: 0, logger });
const client = rpcClient(AnalyticsService, server.url);
const productId = "00000000-0000-4000-8000-0000000000aa";
const rollups = new RollupStore(db);
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
      acc.usage({ u: `user-${String(u).padStart(6, "0")}`, m: MODELS[random(MODELS.length)]!, s: i++ % 10 === 0 ? "manual" : "auto", t: input + output, c: Math.round(input * 0.002 + output * 0.008) / 1000 });
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

const CALLS: [string, () => Promise<unknown>][] = [
  ["summary?days=30", () => client.getSummary({ productId, days: 30 })],
  ["top-users?days=30&limit=10", () => client.getTopUsers({ productId, days: 30, limit: 10 })],
  ["summary?days=90", () => client.getSummary({ productId, days: 90 })],
  ["top-users?days=90&limit=10", () => client.getTopUsers({ productId, days: 90, limit: 10 })],
  ["summary?days=365", () => client.getSummary({ productId, days: 365 })],
];
console.log(`call                          cold ms   p50 ms   p95 ms   (${SAMPLES} sequential calls${TODAY_EVERY ? `, today rewritten every ${TODAY_EVERY}` : ""}; load ${os.loadavg().map((l) => l.toFixed(1)).join(" ")})`);
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
await server.close();
await db.dropDatabase().catch(() => undefined);
await mongo.close();
await embedded?.stop();
if (dir) await rm(dir, { recursive: true, force: true });
