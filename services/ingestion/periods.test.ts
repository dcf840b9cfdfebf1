import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MongoClient } from "mongodb";
import { connectMongo } from "@meter/lib/mongo";
import { testMongoUrl } from "../../test/support/database.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";

const t = suite<{ stack: TestStack; mongo: MongoClient }>("billing periods decided by dates");

t.before(async (ctx) => {
  ctx.stack = await startTestStack();
  ctx.mongo = await connectMongo(await testMongoUrl());
});
t.after(async (ctx) => {
  await ctx.stack.close();
  await ctx.mongo.close();
});

const DAY = 86_400_000;
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

  // The renewal arrives late, with the billing system's own end (28 days, not 30).
  const renewalEnd = new Date(now + 18 * DAY);
  assert.is((await sub(lapsedEnd, renewalEnd)).status, 200);
  const after = (await api.get(`/users/${userId}/session`)).body;
  assert.equal(after.billing_period, { start: rolled.start, end: renewalEnd.toISOString() });
  close(after.current_usage.period_cost, 5, "what was counted while rolled on is in the renewal's period");
  await send([1], new Date());
  close((await api.get(`/users/${userId}/usage`)).body.total_cost, 6);

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

t.run();
