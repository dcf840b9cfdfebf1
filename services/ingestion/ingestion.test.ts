import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code, ConnectError } from "@connectrpc/connect";
import type { MongoClient } from "mongodb";
import { connectMongo } from "@meter/lib/mongo";
import { testMongoUrl } from "../../test/support/database.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";
import type { AnalyticsRecorder, CrossingInit, GateFactInit, GateNoticeInit, UsageFactInit, WebhookPublisher } from "./adapters/peers.ts";
import { eventually } from "../../test/support/eventually.ts";
import { storedJob, type StoredJob } from "./store/jobs.ts";
import { create } from "@bufbuild/protobuf";
import { UsageEventSchema } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { toTimestamp } from "@meter/lib/time";
import { usageDoc } from "./usage/record.ts";
import { plansDirectory } from "./adapters/plans.ts";
import { LeaseStore } from "./leases/store.ts";
import { CounterStore } from "./store/counters.ts";
import { WindowStore } from "./windows/store.ts";
import { countTeams } from "./teams/count.ts";
import { deltas } from "./domain/period-deltas.ts";
import { joinTeam } from "../../test/support/rest.ts";

/** A usage event of an unregistered user as a batch stores it, stamped `at`, in `job`. */
function storedUsage(productId: string, job: string, userId: string, at: Date, costTotal = 0, receivedAt = at) {
  return usageDoc(productId, job, create(UsageEventSchema, { id: randomUUID(), userId, timestamp: toTimestamp(at), costTotal }), undefined, receivedAt);
}

/** A peer that refuses its first `failures` calls (down, then not yet implementing the call), then records. */
class FlakyPeers implements WebhookPublisher, AnalyticsRecorder {
  crossings: CrossingInit[] = [];
  notices: GateNoticeInit[] = [];
  usage: UsageFactInit[] = [];
  gates: GateFactInit[] = [];
  calls = 0;
  constructor(public failures: number) {}
  private gate() {
    this.calls++;
    if (this.failures > 0) {
      this.failures--;
      throw new ConnectError("peer down", this.failures % 2 ? Code.Unavailable : Code.Unimplemented);
    }
  }
  async publishThresholdCrossings(c: CrossingInit[]) {
    this.gate();
    this.crossings.push(...c);
  }
  async publishGateEvents(e: GateNoticeInit[]) {
    this.gate();
    this.notices.push(...e);
  }
  async publishCreditEvents() {
    this.gate();
  }
  async recordEvents(u: UsageFactInit[], g: GateFactInit[]) {
    this.gate();
    this.usage.push(...u);
    this.gates.push(...g);
  }
}

const t = suite<{ stack: TestStack; peers: FlakyPeers; mongo: MongoClient }>("ingestion handovers and recovery");

// The recovery sweep runs every 20 ms here and takes jobs older than 500 ms: a test leaving a job
// behind stores its events first, or the sweep may complete the job without them and count nothing.
t.before(async (ctx) => {
  ctx.peers = new FlakyPeers(6);
  ctx.stack = await startTestStack({
    services: {
      ingestion: {
        relayIntervalMs: 20,
        relayMaxBackoffMs: 200,
        recoveryAfterMs: 500,
        webhooks: ctx.peers,
        analytics: ctx.peers,
      },
    },
  });
  ctx.mongo = await connectMongo(await testMongoUrl());
});
t.after(async (ctx) => {
  await ctx.stack.close();
  await ctx.mongo.close();
});

const DAY = 86_400_000;
const HOUR = 3_600_000;

t("spend thresholds are recorded once per user, period and threshold and handed over despite a failing peer", async ({ stack, peers }) => {
  const { api } = await stack.newProduct();
  const plan = await api.post("/config/plans", { plans: [{ name: "capped", max_spend_per_period: 10 }] });
  const users = ["t1", "t2", "t3"];
  for (const u of users) {
    await api.post("/users", { external_user_id: u });
    await api.post(`/users/${u}/subscription`, {
      plan_id: plan.body.plans[0].id,
      period_start: new Date(Date.now() - DAY).toISOString(),
      period_end: new Date(Date.now() + DAY).toISOString(),
    });
  }
  const batch = (u: string, costs: number[]) =>
    api.post("/events/batch", costs.map((c) => ({ id: randomUUID(), user_id: u, timestamp: new Date().toISOString(), cost_total: c, model: "gpt-4o" })));
  await batch("t1", [2, 2]); // 4: none
  await batch("t1", [1.5]); // 5.5: 50
  // Concurrent requests crossing 80 together, then a manual event crossing 100.
  await Promise.all([batch("t1", [1]), batch("t1", [1]), batch("t1", [1]), batch("t2", [9])]);
  assert.is((await api.post("/events", { user_id: "t1", cost: 2 })).status, 201);
  await batch("t1", [5]);

  const crossed = await eventually(() => {
    const unique = new Map(peers.crossings.map((c) => [c.id as string, c]));
    return unique.size >= 5 ? [...unique.values()] : undefined;
  }, 30_000, "six crossings handed over");
  // A later crossing through the same outbox: once it is handed over, anything the batches
  // above could still hand over has been too.
  await batch("t3", [5]);
  await eventually(() => peers.crossings.some((c) => c.userId === "t3"), 30_000, "a later crossing handed over");
  const unique = new Map(peers.crossings.map((c) => [c.id as string, c]));
  const byUser = (u: string) => [...unique.values()].filter((c) => c.userId === u).map((c) => c.thresholdPct).sort((a, b) => a! - b!);
  assert.equal(byUser("t1"), [50, 80, 100]);
  assert.equal(byUser("t2"), [50, 80]);
  assert.ok(crossed.length >= 5);
  const hundred = [...unique.values()].find((c) => c.userId === "t1" && c.thresholdPct === 100)!;
  assert.is(hundred.spendLimit, 10);
  assert.ok((hundred.currentSpend as number) >= 10);
  assert.is(hundred.planName, "capped");
  assert.ok(peers.calls > 6, "the failing calls were retried");
});

t("sessions of users with different periods each read their own counter, whatever the last session read", async ({ stack }) => {
  // The session reads a guessed counter beside the user lookup (the user's last, else the
  // product's last period): a wrong guess must never show another period's usage.
  const { api } = await stack.newProduct();
  const plan = await api.post("/config/plans", { plans: [{ name: "dated" }] });
  const windows: Record<string, [number, number]> = { early: [-3 * DAY, 20 * DAY], late: [-1 * DAY, 30 * DAY], monthly: [0, 0] };
  for (const [u, [from, to]] of Object.entries(windows)) {
    await api.post("/users", { external_user_id: u });
    const dates = from === 0 && to === 0 ? {} : { period_start: new Date(Date.now() + from).toISOString(), period_end: new Date(Date.now() + to).toISOString() };
    await api.post(`/users/${u}/subscription`, { plan_id: plan.body.plans[0].id, ...dates });
  }
  const spend: Record<string, number> = { early: 1, late: 2, monthly: 4 };
  for (const [u, c] of Object.entries(spend)) {
    await api.post("/events/batch", [{ id: randomUUID(), user_id: u, timestamp: new Date().toISOString(), cost_total: c }]);
  }
  for (const u of ["early", "late", "monthly", "late", "early", "monthly", "monthly"]) {
    const s = await api.get(`/users/${u}/session`);
    assert.is(s.body.current_usage.period_cost, spend[u], `session of ${u}`);
  }
  // New dates for "late", starting after its event: its last session's counter is no longer the right one.
  await api.post("/users/late/subscription", {
    plan_id: plan.body.plans[0].id,
    period_start: new Date().toISOString(),
    period_end: new Date(Date.now() + 30 * DAY).toISOString(),
  });
  assert.is((await api.get("/users/late/session")).body.current_usage.period_cost, 0, "the new period starts at zero");
});

t("every accepted usage and gate event reaches analytics, and every new gate event the webhooks service", async ({ stack, peers }) => {
  const { api, productId } = await stack.newProduct();
  await api.post("/users", { external_user_id: "g1" });
  const usage = Array.from({ length: 40 }, () => ({ id: randomUUID(), user_id: "g1", timestamp: new Date().toISOString(), input_tokens: 3, cost_total: 0.1 }));
  await api.post("/events/batch", usage);
  await api.post("/events/batch", usage.slice(0, 10));
  const manual = await api.post("/events", { user_id: "g1", cost: 1 });
  const gates = Array.from({ length: 7 }, (_, i) => ({
    id: randomUUID(), user_id: "g1", timestamp: new Date().toISOString(), status: "hard_gate", gate_reason: "total_spend",
    usage_pct: 1, current_value: 10, limit_value: 10, blocked: i % 2 === 0,
  }));
  await api.post("/gate-events/batch", gates);
  await eventually(() => {
    const u = new Set(peers.usage.filter((f) => f.productId === productId).map((f) => f.eventId));
    const g = new Set(peers.gates.filter((f) => f.productId === productId).map((f) => f.eventId));
    const n = new Set(peers.notices.filter((f) => f.productId === productId).map((f) => f.id));
    return u.size === 41 && g.size === 7 && n.size === 7;
  }, 30_000, "handovers");
  const facts = peers.usage.filter((f) => f.productId === productId);
  assert.equal(new Set(facts.map((f) => f.eventId)), new Set([...usage.map((e) => e.id), manual.body.id]));
  assert.is(facts.find((f) => f.eventId === manual.body.id)!.source, "manual");
  assert.is(facts.find((f) => f.eventId === usage[0]!.id)!.source, "auto");
  assert.is(facts.find((f) => f.eventId === usage[0]!.id)!.tokens, 3n);
  const notice = peers.notices.find((n) => n.id === gates[0]!.id)!;
  assert.equal([notice.status, notice.gateReason, notice.blocked, notice.limitValue], ["hard_gate", "total_spend", true, 10]);
});

t("a job left unfinished by a crash is completed by the recovery sweep, as stored now and as written before (ids as text)", async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  const db = mongo.db(`${stack.dbPrefix}_ingestion`);
  const asText = (j: StoredJob & { ids?: string }, ids: string[]) => ({ ...j, deflated_ids: undefined, ids: JSON.stringify(ids) });
  for (const [user, written] of [["r1", "now"], ["r1-text", "before"]] as const) {
    await api.post("/users", { external_user_id: user });
    // What a request killed right after inserting its events leaves behind: the job and the events.
    const job = `job_${randomUUID()}`;
    const old = new Date(Date.now() - 5_000);
    const docs = Array.from({ length: 5 }, (_, i) => storedUsage(productId, job, user, old, i + 1));
    const ids = docs.map((d) => d._id);
    const stored = await storedJob({ _id: job, kind: "usage", product_id: productId, ids, created_at: old });
    assert.ok(stored.deflated_ids && stored.ids === undefined, "stored deflated, without the text");
    await db.collection("usage_events").insertMany(docs as never[]);
    await db.collection<StoredJob>("jobs").insertOne(written === "now" ? stored : asText(stored, ids));
    const usage = await eventually(async () => {
      const res = await api.get(`/users/${user}/usage?period=current_month`);
      return res.body.total_cost === 15 ? res.body : undefined;
    }, 30_000, "the sweep to count the events");
    assert.is(usage.total_cost, 15);
    await eventually(async () => (await db.collection("jobs").countDocuments({ _id: job as never })) === 0, 30_000, "the job to be closed");
    // A retry of the same events afterwards changes nothing.
    const retry = await api.post("/events/batch", docs.map((d) => ({ id: d.event_id, user_id: user, timestamp: old.toISOString(), cost_total: d.cost_total })));
    assert.equal(retry.body, { accepted: 0, duplicates: 5 });
    assert.is((await api.get(`/users/${user}/usage?period=current_month`)).body.total_cost, 15);
  }
});

t("a job taken over from a claimant gone silent keeps its guards: that claimant's late addition counts nothing", async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  await api.post("/users", { external_user_id: "r3" });
  const db = mongo.db(`${stack.dbPrefix}_ingestion`);
  // A request that claimed its job and went silent (a paused process, a write queued behind an outage).
  const job = `job_${randomUUID()}`;
  const at = new Date(Date.now() - 5_000);
  const docs = [storedUsage(productId, job, "r3", at, 2), storedUsage(productId, job, "r3", at, 3)];
  await db.collection("usage_events").insertMany(docs as never[]);
  await db.collection<StoredJob>("jobs").insertOne(await storedJob({ _id: job, kind: "usage", product_id: productId, ids: docs.map((d) => d._id), created_at: at, claimed_at: at }));
  await eventually(async () => (await db.collection("jobs").countDocuments({ _id: job as never })) === 0, 30_000, "the sweep to take the job over and close it");
  const month = async () => (await api.get("/users/r3/usage?period=current_month")).body.total_cost as number;
  close(await month(), 5);
  // The process that closed it updates the same counters again (where a closed job's guards go).
  assert.is((await api.post("/events/batch", [{ id: randomUUID(), user_id: "r3", timestamp: at.toISOString(), cost_total: 1 }])).status, 200);
  close(await month(), 6);
  // The silent claimant wakes and adds the job's share, as its completion would.
  const { periods, months } = deltas(docs);
  await new CounterStore(db).add(job, [...periods.map((p) => p.delta), ...months], new Set());
  close(await month(), 6, "the guards were still there: nothing counted twice");
});

t("a team member's job left unfinished counts the team exactly when the member: cut off after the team part, then swept, then retried", async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  // An hour's window, the test started well inside it: the sweep's wait (up to 30 s) never crosses its turn.
  const plan = (await api.post("/config/plans", { plans: [{ name: `open-${randomUUID()}`, limits: [{ name: "rph", metric: "requests", max: 1000, window: "hour" }] }] })).body.plans[0];
  const HOUR = 3_600_000;
  if (Date.now() % HOUR > HOUR - 120_000) await new Promise((r) => setTimeout(r, HOUR - (Date.now() % HOUR) + 50));
  await api.post("/teams", { external_team_id: "crew", name: "Crew" });
  assert.is((await api.post("/teams/crew/subscription", { plan_id: plan.id })).status, 200);
  await api.post("/users", { external_user_id: "r2" });
  assert.is((await api.request("PUT", "/users/r2/team", { body: { team_id: "crew" } })).status, 200);
  const db = mongo.db(`${stack.dbPrefix}_ingestion`);
  const user = (await plansDirectory(stack.rpcUrl).resolve(productId, ["r2"])).get("r2");
  const job = `job_${randomUUID()}`;
  const now = new Date();
  const docs = Array.from({ length: 4 }, (_, i) =>
    usageDoc(productId, job, create(UsageEventSchema, { id: randomUUID(), userId: "r2", timestamp: toTimestamp(now), costTotal: i + 0.5 }), user, now),
  );
  assert.ok(docs.every((d) => d.team?.windows?.length === 1), "each event carries its team share");
  // A request that died once the team part of its completion was written, the member's not yet.
  await db.collection("usage_events").insertMany(docs as never[]);
  await db.collection<StoredJob>("jobs").insertOne(await storedJob({ _id: job, kind: "usage", product_id: productId, ids: docs.map((d) => d._id), created_at: new Date(now.getTime() - 6_000) }));
  const teamCounters = new CounterStore(db, "team_counters", "team_id");
  const teams = { teamCounters, teamWindows: new WindowStore(db, "team_counters", "team_id"), leases: { teams: new LeaseStore(teamCounters.counters, "team_id"), graceMs: 30_000 }, now: () => new Date() };
  await countTeams(teams, job, docs);
  await eventually(async () => (await api.get("/users/r2/usage")).body.total_cost === 8, 30_000, "the sweep to count the events");
  await eventually(async () => (await db.collection("jobs").countDocuments({ _id: job as never })) === 0, 30_000, "the job to be closed");
  const team = async () => (await api.get("/teams/crew/usage")).body;
  assert.equal([(await team()).total_cost, (await team()).total_tokens], [8, 0], "the team once, however often its part ran");
  const counted = (await api.get("/teams/crew/limits")).body.limits.find((d: { reason: string }) => d.reason === "team:limit:rph");
  // The team's window counted each request once.
  assert.equal([counted.window_start, counted.used], [new Date(Math.floor(now.getTime() / HOUR) * HOUR).toISOString(), 4]);
  const retry = await api.post("/events/batch", docs.map((d) => ({ id: d.event_id, user_id: "r2", timestamp: now.toISOString(), cost_total: d.cost_total })));
  assert.equal(retry.body, { accepted: 0, duplicates: 4 });
  assert.equal([(await team()).total_cost, (await api.get("/users/r2/usage")).body.total_cost], [8, 8]);
  // Team documents live apart from users': nothing of the team in the users' collections.
  assert.is(await db.collection("counters").countDocuments({ product_id: productId, user_id: { $ne: "r2" } }), 0);
  assert.is(await db.collection("team_counters").countDocuments({ product_id: productId, team_id: user!.teams.values().next().value!.id }), 1);
});

t("the recovery sweep completes interrupted jobs beside an older one it cannot complete, which it quarantines and then passes by", async ({ stack, mongo }) => {
  const db = mongo.db(`${stack.dbPrefix}_ingestion`);
  const { registry } = await import("@meter/lib/metrics");
  const { MAX_RECOVERY_FAILURES } = await import("./exactly-once/recovery.ts");
  const quarantined = async () => {
    const metric = await registry.getSingleMetric("meter_ingestion_jobs_quarantined_total")?.get();
    return metric?.values.find((v) => v.labels.kind === "usage")?.value ?? 0;
  };
  const before = await quarantined();
  /** What a request killed after inserting its events leaves behind, `ageMs` ago. */
  const leftBehind = async (productId: string, user: string, ageMs: number, cost: unknown, job = `job_${randomUUID()}`) => {
    const at = new Date(Date.now() - ageMs);
    const doc = storedUsage(productId, job, user, at);
    await db.collection("usage_events").insertOne({ ...doc, cost_total: cost } as never);
    await db.collection<StoredJob>("jobs").insertOne(await storedJob({ _id: job, kind: "usage", product_id: productId, ids: [doc._id], created_at: at, claimed_at: at }));
    return job;
  };
  // The oldest job of one product cannot be counted (a figure no counter can add), and ahead
  // of the interrupted batches of another.
  // (An id that sorts first, too: a sweep in no fixed order may well meet it first.)
  const poisoned = await leftBehind((await stack.newProduct()).productId, "p", 9_000, "not a number", `job_!${randomUUID()}`);
  const { api, productId } = await stack.newProduct();
  await api.post("/users", { external_user_id: "other" });
  for (const [i, age] of [8_000, 7_000, 6_000].entries()) await leftBehind(productId, "other", age, i + 1);
  await eventually(async () => (await api.get("/users/other/usage?period=current_month")).body.total_cost === 6, 30_000, "the other product's jobs to be completed");
  const job = await eventually(async () => db.collection("jobs").findOne({ _id: poisoned as never, quarantined_at: { $exists: true } }), 30_000, "the poisoned job to be quarantined");
  assert.is(job.recovery_failures, MAX_RECOVERY_FAILURES);
  // Counted after the mark is written (recovery.ts): waited for, not read at once.
  await eventually(async () => (await quarantined()) === before + 1, 30_000, "the quarantine counted");
  // Quarantined, the sweep passes it by: its count of failures stays.
  await leftBehind(productId, "other", 5_000, 4);
  await eventually(async () => (await api.get("/users/other/usage?period=current_month")).body.total_cost === 10, 30_000, "a later job to be completed");
  assert.is((await db.collection("jobs").findOne({ _id: poisoned as never }))!.recovery_failures, MAX_RECOVERY_FAILURES);
});

const close = (a: number, b: number, msg?: string) => assert.ok(Math.abs(a - b) < 1e-9, `${msg ?? ""} ${a} != ${b}`);

t("a lapsed window rolls on by its length; a renewal recorded late keeps what was counted meanwhile", async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  const plan = await api.post("/config/plans", { plans: [{ name: "capped", max_spend_per_period: 10 }] });
  const planId = plan.body.plans[0].id;
  const userId = `renew-${randomUUID()}`;
  await api.post("/users", { external_user_id: userId });
  const now = Date.now();
  // A 30-day window that ended 10 days ago, and no renewal yet.
  const start = new Date(now - 40 * DAY);
  const lapsedEnd = new Date(now - 10 * DAY);
  const sub = (from: Date, to: Date) =>
    api.post(`/users/${userId}/subscription`, { plan_id: planId, period_start: from.toISOString(), period_end: to.toISOString() });
  assert.is((await sub(start, lapsedEnd)).status, 200);
  const rolled = { start: lapsedEnd.toISOString(), end: new Date(now + 20 * DAY).toISOString() };

  const send = async (costs: number[], at: Date) => {
    const events = costs.map((c) => ({ id: randomUUID(), user_id: userId, timestamp: at.toISOString(), model: "gpt-4o", cost_total: c }));
    assert.is((await api.post("/events/batch", events)).status, 200);
  };
  await send([2, 3], new Date(now - DAY));
  await send([1], new Date(now - 20 * DAY)); // inside the old window: not this period
  const before = (await api.get(`/users/${userId}/session`)).body;
  assert.equal(before.billing_period, rolled, "the same plan, the next 30 days");
  assert.is(before.plan, "capped");
  close(before.current_usage.period_cost, 5);
  close((await api.get(`/users/${userId}/usage`)).body.total_cost, 5);
  // A manual event (stamped on arrival) goes to the same rolled-on window.
  assert.is((await api.post("/events", { user_id: userId, cost: 0.5 })).status, 201);
  close((await api.get(`/users/${userId}/session`)).body.current_usage.period_cost, 5.5);
  close((await api.get(`/users/${userId}/usage`)).body.total_cost, 5.5);

  // The renewal arrives late, with the billing system's own end (28 days, not 30).
  const renewalEnd = new Date(now + 18 * DAY);
  assert.is((await sub(lapsedEnd, renewalEnd)).status, 200);
  const after = (await api.get(`/users/${userId}/session`)).body;
  assert.equal(after.billing_period, { start: rolled.start, end: renewalEnd.toISOString() });
  close(after.current_usage.period_cost, 5.5, "what was counted while rolled on is in the renewal's period");
  await send([1], new Date());
  close((await api.get(`/users/${userId}/usage`)).body.total_cost, 6.5);

  // Thresholds are keyed by the whole period: 50% fired for the rolled-on window, and once
  // more for the renewal's (other end), once each.
  const crossings = await mongo
    .db(`${stack.dbPrefix}_ingestion`)
    .collection("threshold_crossings")
    .find({ product_id: productId, user_id: userId })
    .toArray();
  assert.equal(crossings.map((c) => [c.threshold_pct, c.period_end.toISOString()]).sort(), [
    [50, rolled.end],
    [50, renewalEnd.toISOString()],
  ].sort());
});

t("an event stamped inside new dates that share the start counts in the new period under the new plan", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const plans = await api.post("/config/plans", {
    plans: [{ name: "small", max_spend_per_period: 10 }, { name: "big", max_spend_per_period: 100 }],
  });
  const [small, big] = plans.body.plans.map((p: { id: string }) => p.id);
  const userId = `late-${randomUUID()}`;
  await api.post("/users", { external_user_id: userId });
  const now = Date.now();
  const start = new Date(now - 5 * DAY).toISOString();
  const end = new Date(now + 25 * DAY).toISOString();
  await api.post(`/users/${userId}/subscription`, { plan_id: small, period_start: start, period_end: end });
  // Stamped after the upgrade's dates begin, arriving before the upgrade is recorded.
  const events = [{ id: randomUUID(), user_id: userId, timestamp: new Date(now - DAY).toISOString(), cost_total: 4 }];
  assert.is((await api.post("/events/batch", events)).status, 200);
  await api.post(`/users/${userId}/subscription`, { plan_id: big, period_start: start, period_end: end });
  const session = (await api.get(`/users/${userId}/session`)).body;
  assert.equal([session.plan, session.billing_period, session.current_usage.period_cost], ["big", { start, end }, 4]);
});

/** A product with a free plan and one capped at `cap`, and a user of it on the free plan in calendar-month periods. */
async function freeUser(stack: TestStack, cap: number, prefix: string) {
  const { api, productId } = await stack.newProduct();
  const plans = await api.post("/config/plans", { plans: [{ name: "free" }, { name: "capped", max_spend_per_period: cap }] });
  const [free, capped] = plans.body.plans.map((p: { id: string }) => p.id);
  const userId = `${prefix}-${randomUUID()}`;
  await api.post("/users", { external_user_id: userId });
  assert.is((await api.post(`/users/${userId}/subscription`, { plan_id: free })).status, 200);
  return { api, productId, capped, userId };
}

t("an event stamped inside new dates with another start, sent before the change, moves to the new period", async ({ stack, mongo }) => {
  // No dates: calendar-month periods, whose counter carries the month's share.
  const { api, productId, capped, userId } = await freeUser(stack, 12, "moved");
  const now = Date.now();
  const at = (ms: number, cost: number, model = "gpt-4o") => ({ id: randomUUID(), user_id: userId, timestamp: new Date(ms).toISOString(), model, cost_total: cost, total_tokens: 10 * cost });
  const early = at(now - 4 * HOUR, 1, "o1"); // before the new dates begin: stays
  const inside = [at(now - 2 * HOUR, 4), at(now - 30 * 60_000, 2)];
  assert.is((await api.post("/events/batch", [early, ...inside])).status, 200);
  const months = [...new Set([early, ...inside].map((e) => e.timestamp.slice(0, 7)))];
  const monthUsage = async () => Promise.all(months.map(async (m) => (await api.get(`/users/${userId}/usage?period=${m}`)).body));
  const monthsBefore = await monthUsage();
  close(monthsBefore.reduce((a, u) => a + u.total_cost, 0), 7, "counted before the change");
  const lists = mongo.db(`${stack.dbPrefix}_ingestion`).collection<{ _id: string; ids: string }>("arrival_lists");
  const listed = (await lists.find({ _id: { $regex: `\\|${productId}\\|.*\\|${userId}$` } }).toArray()).filter((l) => !l._id.startsWith("mv_"));
  assert.is(listed.length, 1, "the batch's events in the calendar-month counter");

  // The upgrade began three hours ago; the billing system tells us only now.
  const start = new Date(now - 3 * HOUR).toISOString();
  const end = new Date(now + 30 * DAY).toISOString();
  assert.is((await api.post(`/users/${userId}/subscription`, { plan_id: capped, period_start: start, period_end: end })).status, 200);
  // Several callers at once: the events move once.
  const sessions = await Promise.all([1, 2, 3, 4].map(async () => (await api.get(`/users/${userId}/session`)).body));
  for (const session of sessions) {
    assert.equal([session.plan, session.billing_period], ["capped", { start, end }]);
    close(session.current_usage.period_cost, 6, "the two events stamped inside the new dates");
    assert.equal(session.current_usage.period_tokens_by_model, { "gpt-4o": 60 });
  }
  const usage = (await api.get(`/users/${userId}/usage`)).body;
  close(usage.total_cost, 6);
  assert.is(usage.total_tokens, 60);
  // A mover cut off after moving the totals, before replacing the list: the follower's next
  // round computes the same move, which the counters' guards refuse; then it replaces the list.
  await lists.replaceOne({ _id: listed[0]!._id }, listed[0]!);
  const listedNow = async () => JSON.parse((await lists.findOne({ _id: listed[0]!._id }))!.ids).length;
  await eventually(async () => (await listedNow()) === 1, 30_000, "the follower to repeat the move");
  assert.is(await listedNow(), 1, "only the early event stays listed there");
  close((await api.get(`/users/${userId}/usage`)).body.total_cost, 6);
  assert.equal(await monthUsage(), monthsBefore, "calendar months are by timestamp: unchanged");
  await api.post("/events/batch", [at(Date.now(), 1)]);
  close((await api.get(`/users/${userId}/usage`)).body.total_cost, 7);
  // A mover that read the list before the move and applies it after the new period's counter was
  // written again (another replica's follower, a read's catch-up): the move's guards are still
  // there, so nothing is taken out or added twice.
  await lists.replaceOne({ _id: listed[0]!._id }, listed[0]!);
  await eventually(async () => (await listedNow()) === 1, 30_000, "the follower to repeat the move");
  close((await api.get(`/users/${userId}/usage`)).body.total_cost, 7, "moved once");
  close((await monthUsage()).reduce((a, u) => a + u.total_cost, 0), 8, "calendar months: what was counted before and the later event, once");

  // The new period's 50% threshold (6 of 12) fired for its own dates.
  const crossings = await mongo.db(`${stack.dbPrefix}_ingestion`).collection("threshold_crossings").find({ product_id: productId, user_id: userId }).toArray();
  assert.equal(crossings.map((c) => [c.threshold_pct, c.period_start.toISOString(), c.period_end.toISOString()]), [[50, start, end]]);
});

t("new dates recorded late take their events out of the dated window they were counted in", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const cycle50 = { name: "cycle", metric: "spend", max: 50, window: "period" };
  const plan = await api.post("/config/plans", {
    plans: [
      { name: "capped", max_spend_per_period: 100, limits: [cycle50] },
      { name: "upgraded", max_spend_per_period: 100, limits: [cycle50, { name: "calls", metric: "requests", max: 100, window: "day" }] },
    ],
  });
  const userId = `redated-${randomUUID()}`;
  await api.post("/users", { external_user_id: userId });
  const now = Date.now();
  const sub = (from: number, to: number, i = 0) =>
    api.post(`/users/${userId}/subscription`, { plan_id: plan.body.plans[i].id, period_start: new Date(from).toISOString(), period_end: new Date(to).toISOString() });
  assert.is((await sub(now - 20 * DAY, now + 10 * DAY)).status, 200);
  const at = (ms: number, cost: number) => ({ id: randomUUID(), user_id: userId, timestamp: new Date(ms).toISOString(), cost_total: cost });
  assert.is((await api.post("/events/batch", [at(now - 5 * DAY, 1), at(now - 10 * 60_000, 2)])).status, 200);
  assert.is((await api.post("/events", { user_id: userId, cost: 4 })).status, 201);
  close((await api.get(`/users/${userId}/usage`)).body.total_cost, 7);
  const used = async (name: string) => ((await api.get(`/users/${userId}/session`)).body.limits as { reason: string; used: number }[]).find((d) => d.reason === `limit:${name}`)!.used;
  close(await used("cycle"), 7, "the period window counts the period's events");
  // An upgrade with fresh dates, to a plan that also limits calls a day, told an hour late.
  assert.is((await sub(now - HOUR, now + 30 * DAY, 1)).status, 200);
  // Usage (not the session) is the first call after the change; the manual event moves too.
  close((await api.get(`/users/${userId}/usage`)).body.total_cost, 6);
  close(await used("cycle"), 6, "the period window is the new period's, with the events that moved into it");
  assert.is(await used("calls"), 2, "the new plan's own window counts the calls that moved into its period");
  const lease = await api.post(`/users/${userId}/leases`, { holder: "h1", need: 1, want: 200 });
  assert.is(lease.status, 200);
  const { granted, remaining } = lease.body.lease;
  close(granted + remaining, 94, "the new period has spent 6 of its 100");
});

t("events a late upgrade moves are counted under their model as the new plan names it: its model cap counts them", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const plan = await api.post("/config/plans", {
    plans: [
      { name: "basic", max_spend_per_period: 100 },
      { name: "pro", max_spend_per_period: 100, model_limits: { "gpt-4o": { max_tokens_per_period: 1_000 } } },
    ],
  });
  const userId = `renamed-${randomUUID()}`;
  await api.post("/users", { external_user_id: userId });
  const now = Date.now();
  const sub = (from: number, to: number, i: number) =>
    api.post(`/users/${userId}/subscription`, { plan_id: plan.body.plans[i].id, period_start: new Date(from).toISOString(), period_end: new Date(to).toISOString() });
  assert.is((await sub(now - 20 * DAY, now + 10 * DAY, 0)).status, 200);
  const call = (ms: number) => ({ id: randomUUID(), user_id: userId, timestamp: new Date(ms).toISOString(), model: "gpt-4o-2024-08-06", total_tokens: 100, cost_total: 1 });
  assert.is((await api.post("/events/batch", [call(now - 30 * 60_000), call(now - 10 * 60_000)])).status, 200);
  assert.equal((await api.get(`/users/${userId}/usage`)).body.tokens_by_model, { "gpt-4o-2024-08-06": 200 }, "basic names no model: filed as sent");
  // The upgrade to a plan that caps gpt-4o began an hour ago; the billing system tells us only now.
  assert.is((await sub(now - HOUR, now + 30 * DAY, 1)).status, 200);
  const session = (await api.get(`/users/${userId}/session`)).body;
  assert.equal(session.current_usage.period_tokens_by_model, { "gpt-4o": 200 });
  const cap = (session.limits as { reason: string; used: number }[]).find((d) => d.reason === "model_limit:gpt-4o")!;
  assert.is(cap.used, 200, "the new plan's model cap counts the tokens that moved into its period");
  // A later call is filed under the same name, beside them.
  const later = Date.now();
  assert.is((await api.post("/events/batch", [call(later)])).status, 200);
  assert.equal((await api.get(`/users/${userId}/usage`)).body.tokens_by_model, { "gpt-4o": 300 });
  // Calendar months are by timestamp (within 30 minutes of a month's start the first calls are the month before's).
  const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7);
  const first = monthOf(now - 30 * 60_000);
  const tokens = 100 * [now - 30 * 60_000, now - 10 * 60_000, later].filter((ms) => monthOf(ms) === first).length;
  const month = (await api.get(`/users/${userId}/usage?period=${first}`)).body;
  assert.is(month.total_tokens, tokens, "every event of the month once");
  assert.equal(month.tokens_by_model, { "gpt-4o": tokens }, "the month's usage names them as the period now holding them does");
});

t("credits drawn for events a late change moves go with them: their new period does not draw them again", async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  const plans = await api.post("/config/plans", { plans: [{ name: "prepaid", max_spend_per_period: 0, credits_enabled: true, limits: [{ name: "cycle", metric: "spend", max: 100, window: "period" }] }] });
  const plan_id = plans.body.plans[0].id as string;
  const userId = `prepaid-${randomUUID()}`;
  await api.post("/users", { external_user_id: userId });
  const now = Date.now();
  const dates = (from: number, to: number) => ({ plan_id, period_start: new Date(from).toISOString(), period_end: new Date(to).toISOString() });
  assert.is((await api.post(`/users/${userId}/subscription`, dates(now - 10 * DAY, now + 20 * DAY))).status, 200);
  assert.is((await api.post(`/users/${userId}/credits`, { id: "paid", amount: 10 })).status, 201);
  const at = (ms: number, cost: number) => ({ id: randomUUID(), user_id: userId, timestamp: new Date(ms).toISOString(), cost_total: cost });
  assert.is((await api.post("/events/batch", [at(now - 2 * HOUR, 1), at(now - 30 * 60_000, 0.5)])).status, 200);
  close((await api.get(`/users/${userId}/credits`)).body.balance, 8.5, "drawn in the first period");
  const lists = mongo.db(`${stack.dbPrefix}_ingestion`).collection<{ _id: string; ids: string }>("arrival_lists");
  const [listed] = await lists.find({ _id: { $regex: `\\|${productId}\\|.*\\|${userId}$` } }).toArray();

  // New dates that began three hours ago, told only now: both events move to the new period.
  const start = new Date(now - 3 * HOUR).toISOString();
  assert.is((await api.post(`/users/${userId}/subscription`, dates(now - 3 * HOUR, now + 30 * DAY))).status, 200);
  const session = (await api.get(`/users/${userId}/session`)).body;
  assert.is(session.billing_period.start, start);
  close(session.current_usage.period_cost, 1.5, "moved");
  close(session.credits.balance, 8.5, "moving draws nothing");
  // The new period's next settle draws its own event only.
  assert.is((await api.post("/events/batch", [at(Date.now(), 0.25)])).status, 200);
  close((await api.get(`/users/${userId}/credits`)).body.balance, 8.25, "each event drawn once");
  const dims = (await api.get(`/users/${userId}/limits`)).body.limits as { reason: string; used: number; max: number }[];
  const spend = dims.find((d) => d.reason === "total_spend")!;
  close(spend.max - spend.used, 8.25, "what the cap leaves is the balance");
  const entries = (await api.get(`/users/${userId}/credits/ledger`)).body.entries as { type: string; amount: number }[];
  close(entries.filter((e) => e.type === "usage").reduce((a, e) => a + e.amount, 0), -1.75, "the ledger's usage is the usage");

  // A mover cut off before replacing the list: the follower computes the same move again, which
  // the counters and the account each take once.
  await lists.replaceOne({ _id: listed!._id }, listed!);
  await eventually(async () => JSON.parse((await lists.findOne({ _id: listed!._id }))!.ids).length === 0, 30_000, "the follower to repeat the move");
  assert.is((await api.post("/events/batch", [at(Date.now(), 0.25)])).status, 200);
  close((await api.get(`/users/${userId}/usage`)).body.total_cost, 2, "moved once");
  close((await api.get(`/users/${userId}/credits`)).body.balance, 8, "drawn once");
  const cycle = ((await api.get(`/users/${userId}/session`)).body.limits as { reason: string; used: number }[]).find((d) => d.reason === "limit:cycle")!;
  close(cycle.used, 2, "the period window's counts moved once");
});

t("an event counted under the old history after the change was applied moves with no call about the user", async ({ stack, mongo }) => {
  const { api, productId, capped, userId } = await freeUser(stack, 100, "straggler");
  const now = Date.now();
  const start = new Date(now - 3 * HOUR);
  const end = new Date(now + 30 * DAY);
  const sub = { plan_id: capped, period_start: start.toISOString(), period_end: end.toISOString() };
  assert.is((await api.post(`/users/${userId}/subscription`, sub)).status, 200);
  // The change is applied by this first read: nothing had arrived yet.
  assert.is((await api.get(`/users/${userId}/session`)).body.current_usage.period_cost, 0);

  // A request that resolved the user before the change and died after inserting its event,
  // stamped inside the new dates: the recovery sweep counts it in the calendar month.
  const db = mongo.db(`${stack.dbPrefix}_ingestion`);
  const job = `job_${randomUUID()}`;
  const stamped = new Date(now - HOUR);
  const doc = storedUsage(productId, job, userId, stamped, 2, new Date(now - 10_000));
  assert.is.not(doc.counter_id, `${productId}|${start.toISOString()}|${userId}`, "counted under the old history");
  await db.collection("usage_events").insertOne(doc as never);
  await db.collection<StoredJob>("jobs").insertOne(await storedJob({ _id: job, kind: "usage", product_id: productId, ids: [doc._id], created_at: new Date(now - 10_000) }));

  // No call about the user: the late-change job moves it into the new period's counter.
  // Counters hold money in whole nano-dollars (cost_nano).
  const counters = db.collection<{ _id: string; cost_nano: number }>("counters");
  const moved = await eventually(async () => {
    const c = await counters.findOne({ _id: `${productId}|${start.toISOString()}|${userId}` });
    return c && c.cost_nano > 0 ? c : undefined;
  }, 30_000, "the straggler to move");
  assert.is(moved.cost_nano, 2e9);
  assert.is((await counters.findOne({ _id: doc.counter_id }))!.cost_nano, 0, "taken out of the calendar month");
  const session = (await api.get(`/users/${userId}/session`)).body;
  assert.equal([session.plan, session.billing_period.start], ["capped", start.toISOString()]);
  close(session.current_usage.period_cost, 2);
});

t("new team dates recorded late move the members' events into the team's new period; the members' own counters stay", async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  const teamLimits = [
    { name: "daily", metric: "spend", max: 50, window: "day" },
    { name: "budget", metric: "spend", max: 80, window: "period" },
    { name: "seat", metric: "spend", max: 40, window: "period", scope: "member" },
  ];
  const plans = await api.post("/config/plans", {
    plans: [
      { name: "member" },
      { name: "team", max_spend_per_period: 100, limits: teamLimits },
      { name: "team-plus", max_spend_per_period: 100, limits: [...teamLimits, { name: "calls", metric: "requests", max: 1000, window: "day" }] },
    ],
  });
  const [memberPlan, teamPlan, teamPlus] = plans.body.plans.map((p: { id: string }) => p.id);
  const teamId = `acme-${randomUUID()}`;
  const dates = (from: number, to: number, plan_id = teamPlan) => ({ plan_id, period_start: new Date(from).toISOString(), period_end: new Date(to).toISOString() });
  assert.is((await api.post("/teams", { external_team_id: teamId, name: "Acme" })).status, 201);
  const joined = Date.now();
  assert.is((await api.post(`/teams/${teamId}/subscription`, dates(joined - 20 * DAY, joined + 10 * DAY))).status, 200);
  const [ann, bob] = [`ann-${randomUUID()}`, `bob-${randomUUID()}`];
  for (const u of [ann, bob]) {
    await joinTeam(api, u, teamId);
    assert.is((await api.post(`/users/${u}/subscription`, { plan_id: memberPlan })).status, 200);
  }
  const at = (user: string, cost: number) => ({ id: randomUUID(), user_id: user, timestamp: new Date().toISOString(), model: "gpt-4o", cost_total: cost, total_tokens: 10 * cost });
  assert.is((await api.post("/events/batch", [at(ann, 2), at(bob, 4)])).status, 200);
  const teamUsage = async (period = "current_period") => (await api.get(`/teams/${teamId}/usage?period=${period}`)).body;
  close((await teamUsage()).total_cost, 6, "counted for the team");
  const month = new Date().toISOString().slice(0, 7);
  close((await teamUsage(month)).total_cost, 6);
  const serviceTeamId = (await api.get(`/users/${ann}/session`)).body.team.service_team_id as string;
  const lists = mongo.db(`${stack.dbPrefix}_ingestion`).collection<{ _id: string; ids: string }>("arrival_lists");
  const [listed, ...others] = (await lists.find({ _id: { $regex: `\\|team:${productId}\\|.*\\|${serviceTeamId}$` } }).toArray()).filter((l) => !l._id.startsWith("mv_"));
  assert.ok(listed && others.length === 0, "the batch's team shares listed under the team's period counter");

  const used = async (user: string, reason: string) => ((await api.get(`/users/${user}/session`)).body.limits as { reason: string; used: number }[]).find((d) => d.reason === reason)!.used;
  const daily = (user: string) => used(user, "team:limit:daily");
  close(await daily(ann), 6, "today's window, counted in the team's period counter");
  close(await used(ann, "team:limit:budget"), 6, "the period's window");
  close(await used(ann, "team:limit:seat"), 2, "the member's share of the period");
  // The team's upgrade (to a plan that also limits calls a day) began two days before its members
  // joined (before today's window began); the billing system tells us only now.
  const start = new Date(joined - 2 * DAY).toISOString();
  assert.is((await api.post(`/teams/${teamId}/subscription`, dates(joined - 2 * DAY, joined + 30 * DAY, teamPlus))).status, 200);
  // A read about the team is the first call after the change.
  const usage = await teamUsage();
  close(usage.total_cost, 6, "the new period holds both events");
  assert.equal(usage.tokens_by_model, { "gpt-4o": 60 });
  const session = (await api.get(`/users/${bob}/session`)).body;
  assert.is(session.team.billing_period.start, start);
  close(session.team.current_usage.period_cost, 6);
  const spend = (session.limits as { reason: string; used: number }[]).find((d) => d.reason === "team:total_spend")!;
  close(spend.used, 6, "the team's cap counts them");
  close(await daily(bob), 6, "today's window moved with them");
  close(await used(bob, "team:limit:budget"), 6, "the new period's window holds them");
  close(await used(bob, "team:limit:seat"), 4, "a member's period window is the team's new period's, with the member's events in it");
  close(await used(ann, "team:limit:seat"), 2);
  assert.is(await used(bob, "team:limit:calls"), 2, "the new plan's own window counts the calls that moved into its period");
  close((await teamUsage(month)).total_cost, 6, "calendar months are by timestamp: unchanged");
  close((await api.get(`/users/${bob}/usage`)).body.total_cost, 4, "a member's own usage is its own");

  // A mover cut off after moving the totals, before replacing the list: the follower (the
  // member's session noted the change) computes the same move again, which the guards refuse.
  await lists.replaceOne({ _id: listed!._id }, listed!);
  await eventually(async () => JSON.parse((await lists.findOne({ _id: listed!._id }))!.ids).length === 0, 30_000, "the follower to repeat the move");
  assert.is((await api.post("/events/batch", [at(ann, 1)])).status, 200);
  close((await teamUsage()).total_cost, 7, "moved once");
  close((await api.get(`/users/${ann}/session`)).body.team.current_usage.period_cost, 7);
  close(await daily(ann), 7, "today's window once");
  close(await used(ann, "team:limit:budget"), 7);
  close(await used(ann, "team:limit:seat"), 3, "the member's period window once");
  assert.is(await used(ann, "team:limit:calls"), 3);
});

t("a team's change applied by a read about the team is followed: a member's event counted under the old team period afterwards moves with no call", async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  const plans = (await api.post("/config/plans", { plans: [{ name: "member" }, { name: "team", max_spend_per_period: 100 }] })).body.plans as { id: string }[];
  const teamId = `late-${randomUUID()}`;
  assert.is((await api.post("/teams", { external_team_id: teamId, name: "Late" })).status, 201);
  const now = Date.now();
  const dates = (from: number, to: number) => ({ plan_id: plans[1]!.id, period_start: new Date(from).toISOString(), period_end: new Date(to).toISOString() });
  assert.is((await api.post(`/teams/${teamId}/subscription`, dates(now - 20 * DAY, now + 10 * DAY))).status, 200);
  const member = `m-${randomUUID()}`;
  await joinTeam(api, member, teamId);
  assert.is((await api.post(`/users/${member}/subscription`, { plan_id: plans[0]!.id })).status, 200);
  // The member as a replica resolved it before the change: with the team's old dates.
  const stale = (await plansDirectory(stack.rpcUrl).resolve(productId, [member])).get(member)!;
  // New team dates from three hours ago, told only now; a read about the team is the first call after it.
  const start = new Date(now - 3 * HOUR);
  assert.is((await api.post(`/teams/${teamId}/subscription`, dates(start.getTime(), now + 30 * DAY))).status, 200);
  close((await api.get(`/teams/${teamId}/usage`)).body.total_cost, 0);

  // A request that resolved the member before the change and died after inserting its event
  // (stamped after the member joined, inside the new dates): the recovery sweep counts its team share in the old period
  // (and notices no one: no member call follows the member).
  const db = mongo.db(`${stack.dbPrefix}_ingestion`);
  const job = `job_${randomUUID()}`;
  const stamped = new Date();
  const doc = usageDoc(productId, job, create(UsageEventSchema, { id: randomUUID(), userId: member, timestamp: toTimestamp(stamped), costTotal: 2 }), stale, stamped);
  const newCounter = `${productId}|${start.toISOString()}|${doc.team!.id}`;
  assert.is.not(doc.team!.counter_id, newCounter, "counted under the team's old period");
  await db.collection("usage_events").insertOne(doc as never);
  await db.collection<StoredJob>("jobs").insertOne(await storedJob({ _id: job, kind: "usage", product_id: productId, ids: [doc._id], created_at: new Date(now - 10_000) }));

  // The follower, following the team since its read, moves it into the team's new period.
  const teamCounters = db.collection<{ _id: string; cost_nano: number }>("team_counters");
  const moved = await eventually(async () => {
    const c = await teamCounters.findOne({ _id: newCounter });
    return c && c.cost_nano > 0 ? c : undefined;
  }, 30_000, "the straggler to move");
  assert.is(moved.cost_nano, 2e9);
  assert.is((await teamCounters.findOne({ _id: doc.team!.counter_id }))!.cost_nano, 0, "taken out of the old period");
  close((await api.get(`/teams/${teamId}/usage`)).body.total_cost, 2);
});

/**
 * A team on `first` (dated from 10 days ago) holding a $10 grant, with one member of no plan of
 * its own (the pool pays its usage whole when the team plan draws credits), who spent $1.50.
 */
async function teamWithPool(stack: TestStack, plans: { name: string; max_spend_per_period: number; credits_enabled?: boolean }[]) {
  const { api, productId } = await stack.newProduct();
  const ids = (await api.post("/config/plans", { plans })).body.plans.map((p: { id: string }) => p.id) as string[];
  const teamId = `pool-${randomUUID()}`;
  assert.is((await api.post("/teams", { external_team_id: teamId, name: "Pool" })).status, 201);
  const joined = Date.now();
  const dates = (plan_id: string, from: number, to: number) => ({ plan_id, period_start: new Date(from).toISOString(), period_end: new Date(to).toISOString() });
  assert.is((await api.post(`/teams/${teamId}/subscription`, dates(ids[0]!, joined - 10 * DAY, joined + 20 * DAY))).status, 200);
  assert.is((await api.post(`/teams/${teamId}/credits`, { id: "paid", amount: 10 })).status, 201);
  const member = `m-${randomUUID()}`;
  await joinTeam(api, member, teamId);
  const at = (cost: number) => ({ id: randomUUID(), user_id: member, timestamp: new Date().toISOString(), cost_total: cost });
  assert.is((await api.post("/events/batch", [at(1), at(0.5)])).status, 200);
  const balance = async () => (await api.get(`/teams/${teamId}/credits`)).body.balance as number;
  return { api, productId, ids, teamId, joined, dates, member, at, balance };
}

t("a team pool's draws go with the shares a team's late change moves: drawn once", async ({ stack, mongo }) => {
  const { api, productId, ids, teamId, joined, dates, member, at, balance } = await teamWithPool(stack, [{ name: "pool", max_spend_per_period: 0, credits_enabled: true }]);
  close(await balance(), 8.5, "drawn in the team's first period");
  const serviceTeamId = (await api.get(`/users/${member}/session`)).body.team.service_team_id as string;
  const lists = mongo.db(`${stack.dbPrefix}_ingestion`).collection<{ _id: string; ids: string }>("arrival_lists");
  const [listed] = await lists.find({ _id: { $regex: `\\|team:${productId}\\|.*\\|${serviceTeamId}$` } }).toArray();

  // New team dates that began before the member joined, told only now: both shares move.
  assert.is((await api.post(`/teams/${teamId}/subscription`, dates(ids[0]!, joined - HOUR, joined + 30 * DAY))).status, 200);
  const session = (await api.get(`/users/${member}/session`)).body;
  close(session.team.current_usage.period_cost, 1.5, "moved");
  close(session.team.credits.balance, 8.5, "moving draws nothing");
  assert.is((await api.post("/events/batch", [at(0.25)])).status, 200);
  close(await balance(), 8.25, "each share drawn once");
  const entries = (await api.get(`/teams/${teamId}/credits/ledger`)).body.entries as { type: string; amount: number }[];
  close(entries.filter((e) => e.type === "usage").reduce((a, e) => a + e.amount, 0), -1.75, "the ledger's usage is the usage");

  // A mover cut off before replacing the list: the follower computes the same move again, which
  // the team's counters and the pool each take once.
  await lists.replaceOne({ _id: listed!._id }, listed!);
  await eventually(async () => JSON.parse((await lists.findOne({ _id: listed!._id }))!.ids).length === 0, 30_000, "the follower to repeat the move");
  assert.is((await api.post("/events/batch", [at(0.25)])).status, 200);
  close((await api.get(`/teams/${teamId}/usage`)).body.total_cost, 2, "moved once");
  close(await balance(), 8, "drawn once");
});

t("a team's upgrade to a plan that draws credits, recorded late, draws for what it moved into its period", async ({ stack }) => {
  const plans = [{ name: "capped", max_spend_per_period: 100 }, { name: "pool", max_spend_per_period: 0, credits_enabled: true }];
  const { api, ids, teamId, joined, dates, member, at, balance } = await teamWithPool(stack, plans);
  const pool = ids[1]!;
  close(await balance(), 10, "the capped plan draws nothing");

  // The upgrade to the prepaid plan began before the member's events; told only now.
  assert.is((await api.post(`/teams/${teamId}/subscription`, dates(pool, joined - HOUR, joined + 30 * DAY))).status, 200);
  close((await api.get(`/users/${member}/session`)).body.team.current_usage.period_cost, 1.5, "moved");
  assert.is((await api.post("/events/batch", [at(0.25)])).status, 200);
  close(await balance(), 8.25, "the new period's pool pays what moved into it and the new event");
});

t("a period starting with a calendar month carries that month's share; month usage adds both", async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  const plan = await api.post("/config/plans", { plans: [{ name: "capped", max_spend_per_period: 100 }] });
  const userId = `fold-${randomUUID()}`;
  await api.post("/users", { external_user_id: userId });
  // [Jan 1, Feb 15): starts with January; rolled on from Feb 15 (not a month start).
  const sub = { plan_id: plan.body.plans[0].id, period_start: "2025-01-01T00:00:00.000Z", period_end: "2025-02-15T00:00:00.000Z" };
  assert.is((await api.post(`/users/${userId}/subscription`, sub)).status, 200);
  const at = (timestamp: string, cost: number) => ({ id: randomUUID(), user_id: userId, timestamp, model: "gpt-4o", cost_total: cost });
  const batch = [at("2025-01-10T00:00:00Z", 1), at("2025-02-10T00:00:00Z", 2), at("2025-02-20T00:00:00Z", 4), at("2025-01-31T23:59:59Z", 8)];
  assert.is((await api.post("/events/batch", batch)).status, 200);
  const month = async (m: string) => (await api.get(`/users/${userId}/usage?period=${m}`)).body;
  close((await month("2025-01")).total_cost, 9);
  close((await month("2025-02")).total_cost, 6);
  assert.equal((await month("2025-02")).cost_by_model, { "gpt-4o": 6 });
  const counters = await mongo.db(`${stack.dbPrefix}_ingestion`).collection("counters").find({ product_id: productId }).toArray();
  const byId = new Map(counters.map((c) => [c._id as unknown as string, c]));
  const first = byId.get(`${productId}|2025-01-01T00:00:00.000Z|${userId}`)!;
  // Money in whole nano-dollars (cost_nano).
  assert.equal([first.cost_nano, first.month.cost_nano], [11e9, 9e9], "January's events are in the period counter only");
  assert.ok(!byId.has(`${productId}|month|2025-01|${userId}`));
  assert.is(byId.get(`${productId}|month|2025-02|${userId}`)!.cost_nano, 6e9);
  assert.is(counters.length, 3);
});

t.run();
