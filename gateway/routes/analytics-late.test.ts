import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { createLogger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { rpcClient } from "@meter/lib/rpc";
import { toTimestamp } from "@meter/lib/time";
import { createAnalyticsService } from "../../services/analytics/index.ts";
import type { Db } from "mongodb";
import type { Api } from "../../test/support/http.ts";
import { eventually } from "../../test/support/eventually.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";
import { testMongoUrl } from "../../test/support/database.ts";

/**
 * Events stamped long before they arrive (a backfill, a client that was offline for weeks)
 * count in every analytics figure exactly once, as in usage, whatever the ledger still holds.
 */
const DAY = 86_400_000;
const TODAY = Math.floor(Date.now() / DAY) * DAY;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7);
const NO_PEERS = { tenancy: "", plans: "", ingestion: "", analytics: "", webhooks: "" };

const t = suite<{ stack: TestStack }>("late events over HTTP");

t.before(async (ctx) => {
  ctx.stack = await startTestStack({ services: { ingestion: { relayIntervalMs: 50 }, analytics: { rollIntervalMs: 100 } } });
});
t.after(async (ctx) => {
  await ctx.stack.close();
});

interface Late {
  ago: number;
  at: number;
  id: string;
  cost: number;
  tokens: number;
  model: string;
}

/** Costs exact in binary, so that analytics and usage agree to the last bit. */
const LATE: Late[] = [
  { ago: 45, cost: 1.25, tokens: 100 },
  { ago: 200, cost: 2.5, tokens: 200 },
  { ago: 700, cost: 5, tokens: 400 },
].map((l) => ({ ...l, at: TODAY - l.ago * DAY + 12 * 3_600_000, id: randomUUID(), model: `model-${l.ago}` }));

const batchOf = (user: string, events: Late[]) =>
  events.map((l) => ({ id: l.id, user_id: user, timestamp: new Date(l.at).toISOString(), model: l.model, total_tokens: l.tokens, cost_total: l.cost }));

/**
 * Sends one fresh event for today and waits until analytics counts it (ingestion relays in
 * order, so what was sent before has reached analytics) and no day is left to roll up.
 */
async function settle(api: Api, db: Db): Promise<void> {
  const before = (await api.get("/analytics/summary?days=1")).body.total_events;
  const res = await api.post("/events/batch", [{ id: randomUUID(), user_id: "fresh", timestamp: new Date().toISOString(), cost_total: 0 }]);
  assert.is(res.status, 200, JSON.stringify(res.body));
  await eventually(async () => (await api.get("/analytics/summary?days=1")).body.total_events === before + 1, 30_000, "the fresh event counted");
  await eventually(async () => (await db.collection("dirty_days").countDocuments({})) === 0, 30_000, "every day rolled up");
}

/** Every figure that reaches each late event shows it exactly once, and usage agrees. */
async function checkFigures(api: Api, user: string): Promise<void> {
  const [l45, l200, l700] = LATE as [Late, Late, Late];
  const summary = async (days: number) => (await api.get(`/analytics/summary?days=${days}`)).body;
  // Windows covering the day (today's fresh events are zero-cost and count events only).
  const s46 = await summary(46);
  assert.equal([s46.total_cost, s46.total_tokens], [l45.cost, l45.tokens], "46 days: the event of 45 days ago");
  const s201 = await summary(201);
  assert.equal([s201.total_cost, s201.total_tokens], [l45.cost + l200.cost, l45.tokens + l200.tokens], "201 days: 45 and 200 days ago");
  // As the previous period: [today - 2d + 1, today - d] holds day d ago.
  const p45 = (await summary(45)).previous_period;
  assert.equal([p45.total_cost, p45.total_tokens, p45.total_events, p45.active_users], [l45.cost, l45.tokens, 1, 1]);
  const p200 = (await summary(200)).previous_period;
  assert.equal([p200.total_cost, p200.total_tokens, p200.total_events, p200.active_users], [l200.cost, l200.tokens, 1, 1]);
  const s365 = await summary(365);
  assert.equal([s365.previous_period.total_cost, s365.previous_period.total_tokens, s365.previous_period.total_events], [l700.cost, l700.tokens, 1], "700 days ago");

  const series = (await api.get("/analytics/timeseries?days=365")).body.data as { date: string; cost: number; tokens: number; events: number }[];
  for (const l of [l45, l200]) {
    const row = series.find((r) => r.date === dayOf(l.at));
    assert.equal(row, { date: dayOf(l.at), cost: l.cost, tokens: l.tokens, events: 1 }, `timeseries row of ${l.ago} days ago`);
  }
  assert.is(series.reduce((a, r) => a + r.cost, 0), l45.cost + l200.cost, "no other day has cost");

  const models = (await api.get("/analytics/breakdown?days=365")).body.models as { model: string; cost: number; tokens: number }[];
  for (const l of [l45, l200]) {
    const m = models.find((x) => x.model === l.model);
    assert.equal(m && [m.cost, m.tokens], [l.cost, l.tokens], `breakdown of ${l.model}`);
  }
  assert.not.ok(models.some((x) => x.model === l700.model), "700 days ago is beyond a 365-day breakdown");

  const top = async (days: number) => ((await api.get(`/analytics/top-users?days=${days}&limit=100`)).body.users as any[]).find((u) => u.user_id === user);
  const t46 = await top(46);
  assert.equal([t46.cost, t46.tokens], [l45.cost, l45.tokens]);
  const t365 = await top(365);
  assert.equal([t365.cost, t365.tokens], [l45.cost + l200.cost, l45.tokens + l200.tokens]);

  // Usage of each calendar month touched (the user has no plan) equals analytics' figures.
  const analyticsOf = new Map<Late, { cost: number; tokens: number }>([
    [l45, series.find((r) => r.date === dayOf(l45.at))!],
    [l200, series.find((r) => r.date === dayOf(l200.at))!],
    [l700, { cost: s365.previous_period.total_cost, tokens: s365.previous_period.total_tokens }],
  ]);
  for (const [l, a] of analyticsOf) {
    const u = (await api.get(`/users/${user}/usage?period=${monthOf(l.at)}`)).body;
    assert.equal([u.total_cost, u.total_tokens], [a.cost, a.tokens], `usage and analytics agree for ${monthOf(l.at)}`);
  }
}

t("events 45, 200 and 700 days old count once everywhere, after retention and re-sends too", async ({ stack }) => {
  const { api, productId } = await stack.newProduct("Backfill");
  const user = "backfilled";
  assert.is((await api.post("/users", { external_user_id: user })).status, 201);
  const batch = batchOf(user, LATE);
  const mongo = await connectMongo(await testMongoUrl());
  try {
    const db = mongo.db(`${stack.dbPrefix}_analytics`);
    const sent = await api.post("/events/batch", batch);
    assert.equal(sent.body, { accepted: 3, duplicates: 0 });
    await settle(api, db);
    await checkFigures(api, user);

    // The retention pass (another replica on the same database) keeps every late figure.
    const replica = await createAnalyticsService({ db, logger: createLogger("late-test", "silent"), peers: NO_PEERS, rollIntervalMs: 0 });
    await replica.runRetention();
    await checkFigures(api, user);
    assert.is(await db.collection("late_segments").countDocuments({}), 3, "late facts (a segment per day) kept while their rollups are");

    // The same batch again through the API: duplicates.
    assert.equal((await api.post("/events/batch", batch)).body, { accepted: 0, duplicates: 3 });
    // The same facts straight to analytics in other groupings, as they arrive again once
    // ingestion's duplicate-id window (35 days after arrival) is over: still counted once.
    const analytics = rpcClient(AnalyticsService, stack.rpcUrl);
    const facts = LATE.map((l) => ({
      productId,
      eventId: l.id,
      userId: user,
      timestamp: toTimestamp(new Date(l.at)),
      model: l.model,
      tokens: BigInt(l.tokens),
      cost: l.cost,
      source: "auto",
    }));
    await analytics.recordEvents({ usage: facts.slice(0, 2) });
    await analytics.recordEvents({ usage: facts.slice(1) });
    await settle(api, db);
    await checkFigures(api, user);
    await replica.runRetention();
    await checkFigures(api, user);
  } finally {
    await mongo.close();
  }
});

t("events stamped past the rollups' reach or in the future are refused, each named", async ({ stack }) => {
  const { api } = await stack.newProduct("Bounds");
  const metricsUrl = `${stack.rpcUrl}/metrics`;
  const refused = async (bound: string) => {
    const text = await (await fetch(metricsUrl)).text();
    const line = text.split("\n").find((l) => l.startsWith(`meter_usage_events_refused_timestamp_total{bound="${bound}"}`));
    return line ? Number(line.split(" ").pop()) : 0;
  };
  const [old0, future0] = [await refused("too_old"), await refused("future")];
  const ev = (at: number) => ({ id: randomUUID(), user_id: "u", timestamp: new Date(at).toISOString(), total_tokens: 1 });
  const oldest = TODAY - 730 * DAY;
  const res = await api.post("/events/batch", [ev(oldest), ev(oldest - 1), ev(Date.now()), ev(Date.now() + 3_600_000)]);
  assert.is(res.status, 422, JSON.stringify(res.body));
  assert.equal(res.body.issues.map((i: { path: string }) => i.path), ["/1/timestamp", "/3/timestamp"]);
  assert.match(res.body.detail, /730 days before today/);
  assert.match(res.body.detail, /minutes in the future/);
  assert.is(await refused("too_old"), old0 + 1);
  assert.is(await refused("future"), future0 + 1);
  // Nothing of a refused batch is stored; the oldest day accepted is accepted.
  const ok = await api.post("/events/batch", [ev(oldest), ev(Date.now())]);
  assert.equal(ok.body, { accepted: 2, duplicates: 0 });
});

t.run();
