// `npm run bench:soak`: a simulated year on the embedded database, to show that storage is
// bounded by the retention policy and that analytics memory does not follow a day's size.
//
// - Analytics: SOAK_EVENTS usage events (default 1,000,000) spread over 365 UTC days ending
//   today, 1 % gate events, SOAK_USERS users (2,000), then SOAK_BIG_DAY events (1,000,000)
//   on today alone. Facts are written with RecordEvents' own writes (bench/support/
//   ledger-writes.ts: day marks, ledger segments, marks again; no gRPC hop, batches of up to
//   50,000), day by day with the service's clock on that day, rolled up every 30 days as the
//   roll job would (each dirty day recomputed once from its ledger).
// - Webhooks: per simulated day, threshold crossings 50, 80 and 100 through
//   PublishThresholdCrossings (gRPC) for an endpoint subscribed to 50 and 80, delivered by
//   the service's Agenda worker to a local receiver.
// Then prints document counts and bytes per collection, runs one retention pass of each
// service as of today (what the daily jobs do), and prints them again with the figures the
// analytics queries return before and after (they must be equal). Heap is sampled in this
// process, which hosts the analytics service (and the small webhooks one): see phase().
// - Late facts (lateFacts()): SOAK_LATE usage facts (100,000) stamped over the 730 days before
//   today, so nearly all for days whose ledger is gone, sent today through RecordEvents (gRPC,
//   10,000 a call), a tenth of them sent again in other groupings; rolled up, checked against
//   the figures they must add, then a retention pass; storage printed before and after.
//   SOAK_EVENTS=1000000 SOAK_BIG_DAY=1000000 SOAK_LATE=100000 npm run bench:soak
// Uses MONGODB_URL when set, else the embedded database in a temporary directory.
// SOAK_MODE=mix npm run bench:soak runs the ten-minute mixed load instead (bench/soak-mix.ts).
import os from "node:os";
import { BSON, type Db } from "mongodb";
import { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { createLogger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { rpcClient, serveRpc } from "@meter/lib/rpc";
import { DAY_MS, toTimestamp } from "@meter/lib/time";
import { createAnalyticsService } from "../services/analytics/index.ts";
import type { LedgerFact } from "../services/analytics/store/ledger.ts";
import { thresholdCrossing } from "../services/webhooks/testing/crossings.ts";
import { startInstance } from "../services/webhooks/testing/instance.ts";
import { Receiver } from "../services/webhooks/testing/receiver.ts";
import { LedgerWriter } from "./support/ledger-writes.ts";
import { benchDatabase } from "./support/database.ts";

// SOAK_MODE=mix: ten minutes of mixed traffic against `npm start` instead (bench/soak-mix.ts).
if (process.env.SOAK_MODE === "mix") {
  await (await import("./soak-mix.ts")).default();
  process.exit(0);
}

const EVENTS = Number(process.env.SOAK_EVENTS ?? 1_000_000);
const LATE = Number(process.env.SOAK_LATE ?? 100_000);
const BIG_DAY = Number(process.env.SOAK_BIG_DAY ?? 1_000_000);
const USERS = Number(process.env.SOAK_USERS ?? 2_000);
const DAYS = 365;
const BATCH = 50_000;
const MODELS = ["gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet", "o1", null];

const logger = createLogger("soak", "warn");
const database = await benchDatabase("soak");
const mongo = await connectMongo(database.url);
const run = Date.now();
const analyticsDb = mongo.db(`soak_analytics_${run}`);
const webhooksDb = mongo.db(`soak_webhooks_${run}`);

/**
 * Heap per phase: `peak` is heapUsed sampled every 10 ms (garbage not yet collected included,
 * so it follows V8's collection pace as much as the program); in phases measured `live`, a full
 * GC is forced every 100 ms before sampling, so `live peak` is what the program holds. The
 * roller and the queries await between documents, so the samplers see them mid-work.
 */
const gc = (globalThis as { gc?: () => void }).gc;
let peak = 0;
let livePeak = 0;
let live = false;
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 10);
const liveSampler = setInterval(() => {
  if (!live || !gc) return;
  gc();
  livePeak = Math.max(livePeak, process.memoryUsage().heapUsed);
}, 100);
const mb = (b: number) => `${(b / 2 ** 20).toFixed(1)} MB`;
function phase(measureLive = false): () => string {
  gc?.();
  const base = process.memoryUsage().heapUsed;
  peak = livePeak = base;
  live = measureLive;
  return () => {
    live = false;
    return `heap at start ${mb(base)}, peak ${mb(peak)}${measureLive && gc ? `, live peak ${mb(livePeak)}` : ""}`;
  };
}

const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
const firstDay = today - (DAYS - 1) * DAY_MS;
let clock = new Date(firstDay);
const analytics = await createAnalyticsService({
  db: analyticsDb,
  logger,
  peers: { tenancy: "", plans: "", ingestion: "", analytics: "", webhooks: "" },
  now: () => clock,
  rollIntervalMs: 0,
});
const server = await serveRpc({ modules: [analytics], port: 0, logger });
const client = rpcClient(AnalyticsService, server.url);
const rx = await new Receiver().start();
const webhooks = await startInstance(webhooksDb, { now: () => clock });
const productId = "00000000-0000-4000-8000-000000000001";
const endpoint = (await webhooks.client.createEndpoint({ productId, url: rx.url, subscribedEvents: ["usage.threshold.50", "usage.threshold.80"] })).endpoint!;

const writer = new LedgerWriter(analyticsDb);
let eventNo = 0;
/** `n` usage facts (and 1 % gate facts) spread over `span` ms (the UTC day) from `day`. */
function facts(day: number, n: number, span = DAY_MS): LedgerFact[] {
  const out: LedgerFact[] = [];
  for (let j = 0; j < n; j++) {
    const i = eventNo++;
    const timestamp = new Date(day + Math.floor((j / n) * span));
    const u = `user-${(i * 7919) % USERS}`;
    out.push({
      productId,
      eventId: `e${i}`,
      timestamp,
      kind: "u",
      entry: { u, m: MODELS[i % MODELS.length] ?? null, s: i % 10 === 0 ? "manual" : "auto", t: 100 + (i % 900), c: ((i % 100) + 1) / 1000 },
    });
    if (i % 100 === 0) out.push({ productId, eventId: `g${i}`, timestamp, kind: "g", entry: { u, st: i % 300 === 0 ? "hard_gate" : "soft_gate", b: false } });
  }
  return out;
}

const ms = (t: number) => `${((performance.now() - t) / 1000).toFixed(1)} s`;

// 1. The year, day by day.
let t0 = performance.now();
let heap = phase();
const perDay = Math.floor(EVENTS / DAYS);
for (let d = 0; d < DAYS; d++) {
  const day = firstDay + d * DAY_MS;
  // The end of the simulated day, or now on today: Agenda runs the deliveries by the real clock.
  clock = new Date(Math.min(day + DAY_MS - 1, Date.now()));
  const n = d === DAYS - 1 ? EVENTS - perDay * (DAYS - 1) : perDay;
  for (let b = 0; b < n; b += BATCH) await writer.write(facts(day, Math.min(BATCH, n - b)));
  // The roll job recomputes each dirty day once per pass; a pass every 30 simulated days
  // does the same work per day with fewer round trips.
  if (d % 30 === 29 || d === DAYS - 1) await analytics.rollPending();
  const crossing = (pct: number) =>
    thresholdCrossing({ id: `c${d}-${pct}`, productId, userId: `user-${d % USERS}`, pct, periodStart: new Date(day), periodEnd: new Date(day + DAY_MS), crossedAt: clock });
  await webhooks.client.publishThresholdCrossings({ crossings: [crossing(50), crossing(80), crossing(100)] });
  if (process.env.SOAK_VERBOSE && d % 30 === 0) console.error(`day ${d}: ${eventNo} events, ${ms(t0)}`);
}
console.log(`A year of ${EVENTS.toLocaleString("en")} events written and rolled up day by day in ${ms(t0)}; ${heap()}`);

// 2. One product-day of BIG_DAY events (today), rolled up at once.
t0 = performance.now();
for (let b = 0; b < BIG_DAY; b += BATCH) await writer.write(facts(today, Math.min(BATCH, BIG_DAY - b)));
const writeMs = ms(t0);
t0 = performance.now();
heap = phase(true);
await analytics.rollPending();
console.log(`One day of ${BIG_DAY.toLocaleString("en")} more events: written in ${writeMs}, rolled up in ${ms(t0)}; ${heap()}`);
// The roll job comes back to a busy day as events keep arriving: it rereads only the hours that changed.
const AGAIN = 1_000;
const HOUR_MS = 3_600_000;
await writer.write(facts(Math.floor(Date.now() / HOUR_MS) * HOUR_MS, AGAIN, HOUR_MS));
t0 = performance.now();
await analytics.rollPending();
console.log(`Then ${AGAIN.toLocaleString("en")} more in the current hour, the day rolled up again in ${ms(t0)}`);

// Let the webhook worker finish every delivery.
const deliveries = webhooksDb.collection("deliveries");
for (let i = 0; (await deliveries.countDocuments({ status: "pending" })) > 0 && i < 600; i++) await new Promise((r) => setTimeout(r, 500));

/** Document count and BSON bytes per collection (collStats where the database has it, else summed). */
async function sizes(db: Db): Promise<Map<string, { count: number; bytes: number }>> {
  const out = new Map<string, { count: number; bytes: number }>();
  for (const { name } of (await db.listCollections().toArray()).sort((a, b) => a.name.localeCompare(b.name))) {
    const col = db.collection(name);
    let bytes = 0;
    let count = 0;
    for await (const doc of col.find({})) {
      count++;
      bytes += BSON.calculateObjectSize(doc);
    }
    out.set(name, { count, bytes });
  }
  return out;
}

/** Calls of the bench wait as long as they take: the machine is shared and forced GCs slow them. */
const slow = { timeoutMs: 600_000 };

async function figures() {
  const q = { productId, days: 365 };
  return JSON.stringify(
    {
      summary: await client.getSummary(q, slow),
      series: await client.getTimeseries(q, slow),
      gates: await client.getGateTimeseries(q, slow),
      breakdown: await client.getBreakdown(q, slow),
      top: await client.getTopUsers({ ...q, limit: 100 }, slow),
    },
    (_k, v) => (typeof v === "bigint" ? Number(v) : v),
  );
}

clock = new Date();
t0 = performance.now();
heap = phase(true);
const before = await figures();
console.log(`Queries over 365 days (summary with previous period, timeseries, gates, breakdown, top 100): ${ms(t0)}; ${heap()}`);
const sizesBefore = new Map([...(await sizes(analyticsDb))].map(([k, v]) => [`analytics.${k}`, v]));
for (const [k, v] of await sizes(webhooksDb)) sizesBefore.set(`webhooks.${k}`, v);

t0 = performance.now();
const aReport = await analytics.runRetention(clock);
const wReport = await webhooks.module.runRetention(clock);
console.log(`Retention passes in ${ms(t0)}: analytics ${JSON.stringify(aReport)}, webhooks ${JSON.stringify(wReport)}`);
const after = await figures();
if (after !== before) {
  const at = [...after].findIndex((ch, i) => ch !== before[i]);
  throw new Error(`analytics figures changed across retention, at ${at}: ${before.slice(at - 200, at + 80)} / ${after.slice(at - 200, at + 80)}`);
}
const sizesAfter = new Map([...(await sizes(analyticsDb))].map(([k, v]) => [`analytics.${k}`, v]));
for (const [k, v] of await sizes(webhooksDb)) sizesAfter.set(`webhooks.${k}`, v);

console.log("\n| collection | docs before | bytes before | docs after | bytes after |\n|---|---|---|---|---|");
for (const [k, b] of sizesBefore) {
  const a = sizesAfter.get(k) ?? { count: 0, bytes: 0 };
  console.log(`| ${k} | ${b.count.toLocaleString("en")} | ${b.bytes.toLocaleString("en")} | ${a.count.toLocaleString("en")} | ${a.bytes.toLocaleString("en")} |`);
}
const summary = JSON.parse(after).summary;
console.log(
  `\nAnalytics figures equal before and after retention (365-day summary: ${summary.current.totalEvents} events, ` +
    `${summary.current.activeUsers} users). Webhook deliveries received: ${rx.received.length} ` +
    `(endpoint ${endpoint.id}, subscribed to 50 and 80 only). ${os.cpus().length} CPUs, ` +
    `${process.env.MONGODB_URL ? "MONGODB_URL" : "embedded FerretDB/SQLite"}; bytes are BSON sizes of the documents.`,
);

await lateFacts(sizesAfter);

clearInterval(sampler);
clearInterval(liveSampler);
await webhooks.close();
await rx.stop();
await server.close();
await mongo.close();
await database.stop();

/**
 * 3. SOAK_LATE facts arriving today for the 730 days before it (a backfill): every one must
 * count once in the figures, re-sent ones included, and storage must stay bounded by the
 * rollup retention. Prints the phase's time, heap and storage before and after.
 */
async function lateFacts(sizesBefore: Map<string, { count: number; bytes: number }>): Promise<void> {
  if (LATE === 0) return;
  const expected = { current: 0, previous: 0 };
  const facts = Array.from({ length: LATE }, (_, i) => {
    const ago = 1 + ((i * 7_919) % 729); // 1..729 days ago, spread over two years
    const at = new Date(today - ago * DAY_MS + ((i * 104_729) % DAY_MS));
    if (ago < 365) expected.current++;
    else expected.previous++;
    const u = `user-${(i * 7919) % USERS}`;
    return { productId, eventId: `late${i}`, userId: u, timestamp: toTimestamp(at), model: "late-model", tokens: 10n, cost: 0.5, source: "auto" };
  });
  const q = { productId, days: 365 };
  const s0 = await client.getSummary(q, slow);
  let t1 = performance.now();
  let h = phase();
  for (let i = 0; i < facts.length; i += 10_000) await client.recordEvents({ usage: facts.slice(i, i + 10_000) }, slow);
  // A tenth again, in other groupings: a client re-sending its queue past ingestion's window.
  const again = facts.filter((_, i) => i % 10 === 0).reverse();
  for (let i = 0; i < again.length; i += 3_333) await client.recordEvents({ usage: again.slice(i, i + 3_333) }, slow);
  console.log(`\n${LATE.toLocaleString("en")} late facts over 730 days (+${again.length.toLocaleString("en")} re-sent) recorded through RecordEvents in ${ms(t1)}; ${h()}`);
  // Hundreds of small days: a forced GC every 100 ms would take most of the time, so the
  // heap is sampled without, and what stays after a full GC at the end is printed.
  t1 = performance.now();
  h = phase();
  const days = await analytics.rollPending();
  gc?.();
  console.log(`Their ${days} days rolled up in ${ms(t1)}; ${h()}, ${mb(process.memoryUsage().heapUsed)} after a full GC`);
  const s1 = await client.getSummary(q, slow);
  const got = {
    current: Number(s1.current!.totalEvents - s0.current!.totalEvents),
    previous: Number(s1.previousPeriod!.totalEvents - s0.previousPeriod!.totalEvents),
  };
  if (got.current !== expected.current || got.previous !== expected.previous) {
    throw new Error(`late facts miscounted: expected ${JSON.stringify(expected)}, got ${JSON.stringify(got)}`);
  }
  console.log(`Each counted once: ${got.current} in the 365-day summary, ${got.previous} in its previous period`);
  const mid = await figures();
  t1 = performance.now();
  const report = await analytics.runRetention(clock);
  if ((await figures()) !== mid) throw new Error("analytics figures changed across the retention pass after the late facts");
  console.log(`Retention pass after them in ${ms(t1)}: ${JSON.stringify(report)}; figures unchanged`);
  const sizesLate = await sizes(analyticsDb);
  console.log("\n| collection | docs before late facts | bytes before | docs after late facts and retention | bytes after |\n|---|---|---|---|---|");
  const names = new Set([...sizesBefore.keys()].filter((k) => k.startsWith("analytics.")).map((k) => k.slice(10)).concat([...sizesLate.keys()]));
  for (const k of [...names].sort()) {
    const b = sizesBefore.get(`analytics.${k}`) ?? { count: 0, bytes: 0 };
    const a = sizesLate.get(k) ?? { count: 0, bytes: 0 };
    console.log(`| analytics.${k} | ${b.count.toLocaleString("en")} | ${b.bytes.toLocaleString("en")} | ${a.count.toLocaleString("en")} | ${a.bytes.toLocaleString("en")} |`);
  }
}
