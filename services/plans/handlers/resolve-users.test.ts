import { suite } from "uvu";
import * as assert from "uvu/assert";
import { fromTimestamp } from "@meter/lib/time";
import { eventually } from "../../../test/support/eventually.ts";
import { PlanStore } from "../store/plans.ts";
import { feb, jan, product, withPlans, type PlansSuite } from "../testing/suite.ts";

const t = suite<PlansSuite>("ResolveUsers over gRPC");
withPlans(t);

t("ResolveUsers answers plans from a cache: changes through this replica at once, through another within PLAN_CACHE_MS", async ({ client, mongo, dbName }) => {
  const productId = product();
  const [plan] = (await client.createPlans({ productId, plans: [{ name: "cached", maxSpendPerPeriod: 10 }] })).plans;
  const here = new PlanStore(mongo.db(dbName), { cacheMs: 60_000 });
  const elsewhere = new PlanStore(mongo.db(dbName), { cacheMs: 3_000 });
  const spend = async (store: PlanStore) => (await store.resolved(productId, [plan!.id]))[0]?.max_spend_per_period;
  assert.is(await spend(here), 10);
  assert.is(await spend(elsewhere), 10);
  assert.equal(await here.resolved(product(), [plan!.id]), [], "another product's plan reads as missing, cached or not");
  const current = (await here.get(productId, plan!.id))!;
  const changed = await here.replace(productId, current, { ...current, max_spend_per_period: 20 });
  assert.ok(typeof changed === "object");
  assert.is(await spend(here), 20, "a change through this store shows at once");
  assert.is(await spend(elsewhere), 10, "another replica's cache still holds the old plan");
  await eventually(async () => (await spend(elsewhere)) === 20, 15_000, "the other replica to read the change");
});

t("a cached plan asked for in the second half of its time is read again in the background, the cached one answered meanwhile", async ({ client, mongo, dbName }) => {
  const productId = product();
  const [plan] = (await client.createPlans({ productId, plans: [{ name: "ahead", maxSpendPerPeriod: 10 }] })).plans;
  // The cache's clock; lru-cache reads a start of 0 as "never set".
  let now = 10_000;
  const elsewhere = new PlanStore(mongo.db(dbName), { cacheMs: 1_000, clock: () => now });
  const here = new PlanStore(mongo.db(dbName));
  const spend = async () => (await elsewhere.resolved(productId, [plan!.id]))[0]?.max_spend_per_period;
  assert.is(await spend(), 10);
  const current = (await here.get(productId, plan!.id))!;
  assert.ok(typeof (await here.replace(productId, current, { ...current, max_spend_per_period: 20 })) === "object");
  now = 10_400;
  assert.is(await spend(), 10, "first half: the cached plan, nothing read");
  now = 10_600;
  assert.is(await spend(), 10, "second half: the cached plan answers while it is read again");
  // Still before the first read's expiry (11,000): only the background read can bring the change.
  await eventually(async () => (await spend()) === 20, 15_000, "the background read to replace the cached plan");
  now = 11_300;
  assert.is(await spend(), 20, "past the first read's expiry, the plan read at 10,600 answers");
});

t("resolves users with their whole history oldest first and the plans it names", async ({ client }) => {
  const productId = product();
  const [a, b] = (await client.createPlans({ productId, plans: [{ name: "a", maxSpendPerPeriod: 1 }, { name: "b" }] })).plans;
  await client.createUser({ productId, externalUserId: "h1" });
  await client.createUser({ productId, externalUserId: "h2" });
  await client.setSubscription({ productId, externalUserId: "h1", planId: a!.id, ...jan });
  await client.setSubscription({ productId, externalUserId: "h1", planId: b!.id, billingSubscriptionId: "s2" });
  await client.setSubscription({ productId, externalUserId: "h1", planId: a!.id, ...feb });
  const res = await client.resolveUsers({ productId, externalUserIds: ["h1", "h2", "ghost", "h1"] });
  assert.equal(res.users.map((u) => u.user!.externalUserId).sort(), ["h1", "h2"]);
  const h1 = res.users.find((u) => u.user!.externalUserId === "h1")!;
  assert.equal(h1.subscriptions.map((s) => s.planName), ["a", "b", "a"]);
  assert.equal(fromTimestamp(h1.subscriptions[0]!.periodStart), new Date("2026-01-01T00:00:00Z"));
  assert.is(h1.subscriptions[1]!.periodStart, undefined);
  assert.is(h1.subscriptions[1]!.billingSubscriptionId, "s2");
  assert.equal(fromTimestamp(h1.subscriptions[2]!.periodEnd), new Date("2026-03-01T00:00:00Z"));
  const times = h1.subscriptions.map((s) => fromTimestamp(s.effectiveAt)!.getTime());
  assert.equal(times, [...times].sort((x, y) => x - y));
  assert.equal(Object.keys(h1.plans).sort(), [a!.id, b!.id].sort());
  assert.is(h1.plans[a!.id]!.maxSpendPerPeriod, 1);
  assert.is(h1.user!.planName, "a");
  const h2 = res.users.find((u) => u.user!.externalUserId === "h2")!;
  assert.equal(h2.subscriptions, []);
  assert.equal(h2.plans, {});
  assert.equal((await client.resolveUsers({ productId: product(), externalUserIds: ["h1"] })).users, []);
});

t("a renamed plan shows its new name on users and in history", async ({ client }) => {
  const productId = product();
  const [p] = (await client.createPlans({ productId, plans: [{ name: "old" }] })).plans;
  await client.createUser({ productId, externalUserId: "r" });
  await client.setSubscription({ productId, externalUserId: "r", planId: p!.id });
  await client.updatePlan({ productId, planId: p!.id, plan: { name: "new" }, updateMask: { paths: ["name"] } });
  assert.is((await client.getUser({ productId, externalUserId: "r" })).user!.planName, "new");
  const [resolved] = (await client.resolveUsers({ productId, externalUserIds: ["r"] })).users;
  assert.is(resolved!.subscriptions[0]!.planName, "new");
});

t.run();
