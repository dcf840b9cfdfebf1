// `npm run bench:analytics`: query latency (p50/p99) of every analytics endpoint over gRPC for
// datasets of different sizes (30 days, 1,000 users), to show that it does not grow with the
// number of events. Facts are fed through RecordEvents, the real path, in chronological
// batches of 5,000 (from BENCH_DIRECT_FROM = 500,000 events on: straight into the ledger with
// RecordEvents' own writes, in batches of 50,000); rollups are then brought up to date.
//   BENCH_SIZES=10000,1000000 BENCH_QUERIES=30 npm run bench:analytics
// Uses MONGODB_URL when set, else the embedded database in a temporary directory.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { startEmbeddedDb } from "@meter/lib/embedded-db";
import { createLogger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { rpcClient, serveRpc } from "@meter/lib/rpc";
import { toTimestamp } from "@meter/lib/time";
import { createAnalyticsService } from "../services/analytics/index.ts";
import { LedgerWriter } from "./support/ledger-writes.ts";

const SIZES = (process.env.BENCH_SIZES ?? "10000,1000000").split(",").map(Number);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 30);
const USERS = 1_000;
const DAYS = 30;
const BATCH = 5_000;
/** From this size on, facts are written straight into the ledger (RecordEvents' own writes). */
const DIRECT_FROM = Number(process.env.BENCH_DIRECT_FROM ?? 500_000);
const MODELS = ["gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet", "o1", null];
const DAY = 86_400_000;

const logger = createLogger("bench", "warn");
const dir = process.env.MONGODB_URL ? undefined : await mkdtemp(path.join(os.tmpdir(), "meter-bench-"));
const embedded = dir ? await startEmbeddedDb(dir) : undefined;
const mongo = await connectMongo(process.env.MONGODB_URL ?? embedded!.url);
const now = new Date();
const today = Math.floor(now.getTime() / DAY) * DAY;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const rows: string[] = [];
for (const size of SIZES) {
  const db = mongo.db(`bench_analytics_${size}_${Date.now()}`);
  const module = await createAnalyticsService({
    db,
    logger,
    peers: { tenancy: "", plans: "", ingestion: "", analytics: "", webhooks: "" },
    rollIntervalMs: 0,
    plans: { countSubscribers: async () => [{ planName: "pro", subscriberCount: 1, teamSubscriberCount: 0 }] },
  });
  const server = await serveRpc({ modules: [module], port: 0, logger });
  const client = rpcClient(AnalyticsService, server.url);
  const productId = "00000000-0000-4000-8000-000000000001";

  const direct = size >= DIRECT_FROM;
  const batchSize = direct ? 50_000 : BATCH;
  const writer = new LedgerWriter(db);
  // Events evenly spread over the last 30 days, oldest first, as an outbox would send them.
  const start = today - (DAYS - 1) * DAY;
  const span = now.getTime() - start;
  let seeded = 0;
  const t0 = performance.now();
  for (let b = 0; b < size; b += batchSize) {
    const n = Math.min(batchSize, size - b);
    const usage = Array.from({ length: n }, (_, j) => {
      const i = b + j;
      return {
        productId,
        eventId: `e${i}`,
        userId: `user-${(i * 7919) % USERS}`,
        timestamp: toTimestamp(new Date(start + Math.floor((i / size) * span))),
        model: MODELS[i % MODELS.length] ?? undefined,
        tokens: BigInt(100 + (i % 900)),
        cost: ((i % 100) + 1) / 1000,
        source: i % 10 === 0 ? "manual" : "auto",
        toolCalls: 0n,
      };
    });
    const gates = usage.filter((_, j) => j % 100 === 0).map((u, j) => ({
      productId,
      eventId: `g${b + j}`,
      userId: u.userId,
      timestamp: u.timestamp,
      status: j % 3 === 0 ? "hard_gate" : "soft_gate",
      blocked: false,
    }));
    if (direct) {
      // Same writes as RecordEvents (marks, ledger, marks) without the gRPC hop, in big batches.
      const facts = [
        ...usage.map((u) => ({ productId, eventId: u.eventId, timestamp: new Date(Number(u.timestamp.seconds) * 1000), kind: "u" as const, entry: { u: u.userId, m: u.model ?? null, s: u.source as "auto" | "manual", t: Number(u.tokens), c: u.cost } })),
        ...gates.map((g) => ({ productId, eventId: g.eventId, timestamp: new Date(Number(g.timestamp.seconds) * 1000), kind: "g" as const, entry: { u: g.userId, st: g.status, b: g.blocked } })),
      ];
      await writer.write(facts);
    } else {
      await client.recordEvents({ usage, gates });
    }
    seeded += n;
    if (process.env.BENCH_VERBOSE) console.error(`seeded ${seeded} in ${Math.round(performance.now() - t0)} ms`);
  }
  const seedMs = performance.now() - t0;
  const t1 = performance.now();
  const days = await module.rollPending();
  const rollMs = performance.now() - t1;

  const endpoints: [string, () => Promise<unknown>][] = [
    ["summary", () => client.getSummary({ productId, days: 30 })],
    ["timeseries", () => client.getTimeseries({ productId, days: 30 })],
    ["gate-timeseries", () => client.getGateTimeseries({ productId, days: 30 })],
    ["breakdown", () => client.getBreakdown({ productId, days: 30 })],
    ["top-users", () => client.getTopUsers({ productId, days: 30, limit: 10 })],
    ["summary source=manual", () => client.getSummary({ productId, days: 30, filter: { source: "manual" } })],
  ];
  const check = await client.getSummary({ productId, days: 30 });
  if (Number(check.current!.totalEvents) !== size) throw new Error(`expected ${size} events, rollups say ${check.current!.totalEvents}`);
  console.log(
    `${size} events: seeded in ${(seedMs / 1000).toFixed(1)} s (${Math.round(size / (seedMs / 1000))} events/s), ` +
      `${direct ? "straight into the ledger" : "through RecordEvents"}, ${days} days rolled up in ${(rollMs / 1000).toFixed(1)} s; active users ${check.current!.activeUsers}`,
  );
  for (const [name, call] of endpoints) {
    for (let i = 0; i < 3; i++) await call();
    const ms: number[] = [];
    for (let i = 0; i < QUERIES; i++) {
      const q = performance.now();
      await call();
      ms.push(performance.now() - q);
    }
    ms.sort((a, b) => a - b);
    rows.push(`| ${size.toLocaleString("en")} | ${name} | ${pct(ms, 50).toFixed(1)} | ${pct(ms, 99).toFixed(1)} |`);
    console.log(rows.at(-1));
  }
  await server.close();
  await db.dropDatabase().catch(() => undefined);
}

console.log(`\n| events | endpoint | p50 ms | p99 ms |\n|---|---|---|---|\n${rows.join("\n")}`);
console.log(`(${QUERIES} queries per endpoint after 3 warm-up calls; days=30; ${USERS} users; ${os.cpus().length} CPUs; ${process.env.MONGODB_URL ? "MONGODB_URL" : "embedded FerretDB/SQLite"})`);
await mongo.close();
await embedded?.stop();
if (dir) await rm(dir, { recursive: true, force: true });
