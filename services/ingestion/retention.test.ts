import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Db, MongoClient } from "mongodb";
import { createLogger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { DAY_MS } from "@meter/lib/time";
import { testMongoUrl } from "../../test/support/database.ts";
import { eventually } from "../../test/support/eventually.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";
import type { AnalyticsRecorder, CrossingInit, WebhookPublisher } from "./adapters/peers.ts";
import { createIngestionService, type IngestionModule } from "./index.ts";
import { storedJob, type StoredJob } from "./store/jobs.ts";

/** Records what ingestion hands over (the peers are not under test here). */
class Recorder implements WebhookPublisher, AnalyticsRecorder {
  crossings: CrossingInit[] = [];
  async publishThresholdCrossings(c: CrossingInit[]) {
    this.crossings.push(...c);
  }
  async publishGateEvents() {}
  async publishCreditEvents() {}
  async recordEvents() {}
}

/**
 * A retention pass changes no figure the API returns (usage of every period kind, session,
 * gate events) and fires no threshold twice, while the old events, gate-event hours and
 * crossings of long-ended periods are gone; what an open job needs stays.
 */
const t = suite<{ stack: TestStack; mongo: MongoClient; db: Db; peers: Recorder; replica: IngestionModule }>("ingestion retention");
const T0 = new Date();
let clock = T0;
const LATE = new Date(T0.getTime() + 40 * DAY_MS);

t.before(async (ctx) => {
  ctx.peers = new Recorder();
  const ingestion = { relayIntervalMs: 50, webhooks: ctx.peers, analytics: ctx.peers, now: () => clock };
  ctx.stack = await startTestStack({ services: { ingestion } });
  ctx.mongo = await connectMongo(await testMongoUrl());
  ctx.db = ctx.mongo.db(`${ctx.stack.dbPrefix}_ingestion`);
  // Another replica on the same database runs the passes.
  const peers = { tenancy: ctx.stack.rpcUrl, plans: ctx.stack.rpcUrl, ingestion: "", analytics: "", webhooks: "" };
  ctx.replica = await createIngestionService({ db: ctx.db, logger: createLogger("retention-test", "silent"), peers, ...ingestion });
});

t.after(async (ctx) => {
  await ctx.stack.close();
  await ctx.mongo.close();
});

const iso = (d: Date) => d.toISOString();
const ago = (days: number) => new Date(T0.getTime() - days * DAY_MS);

t("usage, session, gate events and thresholds are unchanged by retention; what should go is gone", async ({ stack, db, peers, replica }) => {
  const { api } = await stack.newProduct();
  const plan = (await api.post("/config/plans", { plans: [{ name: "capped", max_spend_per_period: 10 }] })).body.plans[0].id;
  const subscribe = async (u: string, start: Date, end: Date) => {
    await api.post("/users", { external_user_id: u });
    await api.post(`/users/${u}/subscription`, { plan_id: plan, period_start: iso(start), period_end: iso(end) });
  };
  await subscribe("cur", ago(1), new Date(T0.getTime() + 60 * DAY_MS));
  await subscribe("old", ago(70), ago(20));
  const batch = (u: string, at: Date, costs: number[]) =>
    api.post("/events/batch", costs.map((c) => ({ id: randomUUID(), user_id: u, timestamp: iso(at), cost_total: c, model: "gpt-4o", input_tokens: 7 })));
  for (let i = 0; i < 6; i++) await batch("cur", T0, [1, 1]); // 12: 50, 80, 100
  for (let i = 0; i < 3; i++) await batch("old", ago(30), [4]); // 12: 50, 80, 100
  const gates = Array.from({ length: 4 }, (_, i) => ({
    id: randomUUID(), user_id: "cur", timestamp: iso(T0), status: i === 0 ? "hard_gate" : "soft_gate", gate_reason: "total_spend",
    usage_pct: 0.8, current_value: 8, limit_value: 10, blocked: i === 0,
  }));
  await api.post("/gate-events/batch", gates);
  // Stamped inside the accepted window now, before the listing's window as of LATE (received
  // now, so the raw events stay).
  await api.post("/gate-events/batch", gates.slice(0, 2).map((g) => ({ ...g, id: randomUUID(), user_id: "old", timestamp: iso(ago(89)) })));
  assert.is((await api.get("/users/old/gate-events")).body.events.length, 2);
  const handed = () => eventually(async () => (await db.collection("outbox_webhooks").countDocuments()) === 0, 30_000, "crossings handed over");
  await handed();
  assert.is(new Set(peers.crossings.map((c) => c.id)).size, 6);

  clock = LATE;
  const month = (d: Date) => iso(d).slice(0, 7);
  const figures = async () => ({
    curPeriod: (await api.get("/users/cur/usage?period=current_period")).body,
    curMonth: (await api.get(`/users/cur/usage?period=${month(T0)}`)).body,
    current: (await api.get("/users/cur/usage?period=current_month")).body,
    oldMonth: (await api.get(`/users/old/usage?period=${month(ago(30))}`)).body,
    session: (await api.get("/users/cur/session")).body,
    gates: (await api.get("/users/cur/gate-events")).body,
  });
  const before = await figures();
  assert.is(before.curPeriod.total_cost, 12);
  assert.is(before.oldMonth.total_cost, 12);
  assert.is(before.gates.events.length, 4);

  // A job still open (its request died after adding to the counters) whose events are old enough to go.
  // Its entry is still in the counters' guard (the last job of "cur": no later update released it).
  const events = db.collection<{ _id: string; job: string }>("usage_events");
  const guards = await db.collection("counters").find({ user_id: "cur" }).toArray();
  const openJob = Object.keys(guards[0]!.jobs).find((j) => guards.every((c) => c.jobs[j]))!;
  const ids = (await events.find({ job: openJob }).toArray()).map((e) => e._id);
  await db.collection<StoredJob>("jobs").insertOne(await storedJob({ _id: openJob, kind: "usage", product_id: "", ids, created_at: LATE, claimed_at: LATE }));

  // Lists of recent arrivals (late-changes/arrivals.ts), long past their window: all go.
  const arrivals = async () => (await db.collection("arrival_lists").countDocuments()) + (await db.collection("arrival_buckets").countDocuments());
  const recent = await arrivals();
  assert.ok(recent > 0);
  const report = await replica.runRetention(LATE);
  // 15 usage events, 2 of them the open job's; of the gate events' hours, old's is too old.
  assert.equal(report, { usageEvents: 13, gateEvents: 0, gateHours: 1, crossings: 3, jobs: 0, arrivals: recent });
  assert.is(await arrivals(), 0);
  assert.equal((await api.get("/users/old/gate-events")).body.events, []);
  assert.equal((await db.collection("gate_event_users").findOne({ _id: `${(await db.collection("gate_events").findOne({ user_id: "old" }))!.product_id}|old` as never }))!.hours, []);
  assert.equal(await events.distinct("job"), [openJob]);
  assert.is(await db.collection("counters").countDocuments(), 4);
  assert.equal((await db.collection("threshold_crossings").find().toArray()).map((c) => c.user_id), ["cur", "cur", "cur"]);
  assert.equal(await figures(), before);
  assert.equal(await replica.runRetention(LATE), { usageEvents: 0, gateEvents: 0, gateHours: 0, crossings: 0, jobs: 0, arrivals: 0 });

  // The open job is taken over: its counters' guard entries refuse its second addition.
  clock = new Date(LATE.getTime() + 10 * 60_000);
  await eventually(async () => (await db.collection("jobs").countDocuments()) === 0, 30_000, "the open job completed");
  assert.equal(await figures(), before);

  // Late events: into the kept counters (added once), and into the long-ended period
  // whose crossings are gone (no threshold fires again).
  await batch("cur", T0, [0.5]);
  await batch("old", ago(30), [5]);
  await handed();
  const after = await figures();
  assert.is(after.curPeriod.total_cost, 12.5);
  assert.is(after.curMonth.total_cost, 12.5);
  assert.is(after.oldMonth.total_cost, 17);
  assert.is(new Set(peers.crossings.map((c) => c.id)).size, 6);
  assert.equal(after.gates, before.gates);
});

t.run();
