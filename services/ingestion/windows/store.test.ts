import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MongoClient } from "mongodb";
import { connectMongo } from "@meter/lib/mongo";
import { testMongoUrl } from "../../../test/support/database.ts";
import type { BillingPeriod } from "@meter/rules";
import { windowDeltas, windowShares, type WindowPlan } from "./shares.ts";
import { WindowStore } from "./store.ts";

// The window counters against the real database: a job counts once however often it is
// completed (a retry, a takeover after a crash), sums stay exact past 2^31 nano-dollars on the
// embedded database, and a user's document keeps only what can still gate or be read.
const t = suite<{ mongo: MongoClient; store: WindowStore }>("window store");

t.before(async (ctx) => {
  ctx.mongo = await connectMongo(await testMongoUrl());
  ctx.store = new WindowStore(ctx.mongo.db(`windows_${Date.now()}`));
});
t.after(async (ctx) => {
  await ctx.mongo.close();
});

const PLAN: WindowPlan = {
  timeZone: "America/New_York",
  limits: [
    { name: "daily", metric: "spend", max: 5, window: "day", duration_minutes: null, model: null, soft_gate_at: null, hard_gate_at: null },
    { name: "five-hours", metric: "spend", max: 5, window: "rolling", duration_minutes: 300, model: null, soft_gate_at: null, hard_gate_at: null },
    { name: "rpm", metric: "requests", max: 60, window: "minute", duration_minutes: null, model: null, soft_gate_at: null, hard_gate_at: null },
    // Same dimension as "daily": counted once, shared.
    { name: "daily-too", metric: "spend", max: 9, window: "day", duration_minutes: null, model: null, soft_gate_at: null, hard_gate_at: null },
    { name: "gpt", metric: "tokens", max: 100, window: "day", duration_minutes: null, model: "gpt-4o", soft_gate_at: null, hard_gate_at: null },
  ],
};
const PERIOD: BillingPeriod = { start: new Date("2026-03-01T00:00:00Z"), end: new Date("2026-04-01T00:00:00Z"), subscription: null, calendar: true };

function event(user: string, at: Date, cost: number, model: string | null = null) {
  const e = { product_id: "p", user_id: user, timestamp: at, model, input_tokens: 10, output_tokens: 5, cost_total: cost };
  return { ...e, windows: windowShares(PLAN, PERIOD, e, at) };
}

const fields = (doc: { w?: Record<string, unknown> } | null) => Object.keys(doc?.w ?? {}).sort();

t("shares: one per distinct dimension, the model filter applies, ended windows are left out", () => {
  const at = new Date("2026-03-07T17:00:00Z");
  const shares = windowShares(PLAN, PERIOD, { timestamp: at, model: "gpt-4o", input_tokens: 10, output_tokens: 5, cost_total: 0.25 }, at)!;
  assert.is(shares.length, 4, "daily and daily-too share one entry; gpt counts");
  assert.equal(shares.map((s) => s.n).sort((a, b) => a - b), [1, 15, 250_000_000, 250_000_000]);
  assert.is(windowShares(PLAN, PERIOD, { timestamp: at, model: "other", input_tokens: 1, output_tokens: 1, cost_total: 1 }, at)!.length, 3);
  // Received a day later: its day, minute and rolling bucket (5 h) have all ended.
  assert.is(windowShares(PLAN, PERIOD, { timestamp: at, model: null, input_tokens: 1, output_tokens: 1, cost_total: 1 }, new Date(at.getTime() + 86_400_000)), undefined);
  assert.is(windowShares({ timeZone: "UTC", limits: [] }, PERIOD, { timestamp: at, model: null, input_tokens: 1, output_tokens: 1, cost_total: 1 }, at), undefined);
});

t("a job counts once however often it is completed; other jobs add; sums pass 2^31 exactly", async ({ store }) => {
  const at = new Date("2026-03-07T17:00:00Z");
  const job = windowDeltas([event("u1", at, 2), event("u1", at, 2)], at);
  await store.add("job-a", job, at);
  await store.add("job-a", job, at); // a retry
  await Promise.all([store.add("job-a", job, at), store.add("job-a", job, at)]); // two takeovers at once
  await store.add("job-b", windowDeltas([event("u1", at, 0.5)], at), at);
  const doc = await store.get("p|w|u1");
  const amounts = Object.values(doc!.w ?? {}).map((v) => Number(v.n)).sort((a, b) => a - b);
  // 4.5 dollars = 4.5e9 nano-dollars (past 2^31), in the day and in one rolling bucket; 3 requests.
  assert.equal(amounts, [3, 4_500_000_000, 4_500_000_000]);
  assert.equal(Object.keys(doc!.jobs).sort(), ["job-a", "job-b"]);
});

t("entries of ended windows and aged-out buckets go, and so do closed jobs' guards: the document stays bounded", async ({ store }) => {
  const t0 = new Date("2026-03-07T17:00:00Z");
  for (let i = 0; i < 30; i++) {
    // A call every 10 minutes for 5 hours: 30 buckets, 30 minutes, one day.
    const at = new Date(t0.getTime() + i * 600_000);
    await store.add(`job-${i}`, windowDeltas([event("u2", at, 0.01)], at), at);
    store.released(`job-${i}`, ["p|w|u2"]);
  }
  const before = await store.get("p|w|u2");
  assert.ok(Object.keys(before!.jobs).length <= 1, `closed jobs' guards go: ${Object.keys(before!.jobs)}`);
  // Only the current minute's entry of rpm is kept; every rolling bucket (5 h) and the day.
  const minute = fields(before).filter((k) => k.startsWith("requests:minute"));
  assert.is(minute.length, 1);
  assert.is(fields(before).filter((k) => k.startsWith("spend:rolling")).length, 30);

  // Two days later one more call: nothing of before can gate any more, so only its own entries
  // remain (the process knows the document's entries from its read after the last update).
  const later = new Date(t0.getTime() + 2 * 86_400_000);
  await store.add("job-late", windowDeltas([event("u2", later, 0.01)], later), later);
  const after = await store.get("p|w|u2");
  assert.is(fields(after).length, 3, JSON.stringify(fields(after)));
  for (const v of Object.values(after!.w ?? {})) assert.ok(Number(v.e) > later.getTime());
});

t("a document whose ends the writing processes did not know (written by others, or forgotten) loses its ended entries once they are many", async ({ mongo }) => {
  const db = mongo.db(`windows_forgotten_${Date.now()}`);
  const t0 = new Date("2026-03-07T17:00:00Z");
  // Twenty calls a minute apart, each counted by a process that knew nothing of the document.
  for (let i = 0; i < 20; i++) {
    const at = new Date(t0.getTime() + i * 60_000);
    await new WindowStore(db).add(`job-f${i}`, windowDeltas([event("u3", at, 0.01)], at), at);
  }
  const before = fields(await new WindowStore(db).get("p|w|u3"));
  assert.is(before.filter((k) => k.startsWith("requests:minute")).length, 20, "every minute's entry stayed");
  // One more call two days later, then any other round of the same process.
  const other = new WindowStore(db);
  const later = new Date(t0.getTime() + 2 * 86_400_000);
  await other.add("job-f-late", windowDeltas([event("u3", later, 0.01)], later), later);
  await other.add("job-f-next", windowDeltas([event("u4", later, 0.01)], later), later);
  const after = await other.get("p|w|u3");
  assert.is(fields(after).length, 3, JSON.stringify(fields(after)));
  for (const v of Object.values(after!.w ?? {})) assert.ok(Number(v.e) > later.getTime());
});

t("concurrent jobs share rounds and each counts once, also a job asked twice at once and a retry", async ({ store }) => {
  const at = new Date("2026-03-07T17:00:00Z");
  const users = ["c1", "c2", "c3"];
  const job = (cost: number) => windowDeltas(users.map((u) => event(u, at, cost)), at);
  await store.add("job-c0", job(1), at);
  await Promise.all([
    ...Array.from({ length: 8 }, (_, i) => store.add(`job-c${i + 1}`, job(1), at)),
    store.add("job-c3", job(1), at),
    store.add("job-c0", job(1), at),
  ]);
  for (const u of users) {
    const doc = await store.get(`p|w|${u}`);
    const amounts = Object.values(doc!.w ?? {}).map((v) => Number(v.n)).sort((a, b) => a - b);
    assert.equal(amounts, [9, 9_000_000_000, 9_000_000_000], `document of ${u}: nine jobs, each once`);
  }
});

t.run();
