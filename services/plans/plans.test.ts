import { suite } from "uvu";
import * as assert from "uvu/assert";
import { randomUUID } from "node:crypto";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { MongoClient } from "mongodb";
import { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { createLogger } from "@meter/lib/logger";
import { rpcClient, serveRpc, type RpcServer } from "@meter/lib/rpc";
import { fromTimestamp, toTimestamp } from "@meter/lib/time";
import { eventually } from "../../test/support/eventually.ts";
import { withServedModule } from "../../test/support/rpc.ts";
import { createPlansService } from "./index.ts";
import { PlanStore } from "./store/plans.ts";

const t = suite<{ mongo: MongoClient; server: RpcServer; client: Client<typeof PlansService>; dbName: string }>(
  "plans service over gRPC",
);

withServedModule(t, PlansService, "plans", (db, logger) =>
  createPlansService({ db, logger, peers: { tenancy: "", plans: "", ingestion: "", analytics: "", webhooks: "" } }),
);

async function failure(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("expected the call to fail");
}

const product = () => randomUUID();
const jan = { periodStart: toTimestamp(new Date("2026-01-01T00:00:00Z")), periodEnd: toTimestamp(new Date("2026-02-01T00:00:00Z")) };
const feb = { periodStart: toTimestamp(new Date("2026-02-01T00:00:00Z")), periodEnd: toTimestamp(new Date("2026-03-01T00:00:00Z")) };

t("creates plans with every default filled in and request-wide gates applied", async ({ client }) => {
  const productId = product();
  const res = await client.createPlans({
    productId,
    softGateAt: 0.5,
    plans: [{ name: "free", maxSpendPerPeriod: 0 }, { name: "pro", softGateAt: 0.9, hardGateAt: 0.95 }],
  });
  assert.equal(res.duplicates, []);
  const [free, pro] = res.plans;
  assert.is(free!.name, "free");
  assert.is(free!.maxSpendPerPeriod, 0);
  assert.is(free!.maxSpendPerSession, undefined);
  assert.is(free!.sessionTimeoutMinutes, 30);
  assert.is(free!.softGateAt, 0.5);
  assert.is(free!.hardGateAt, 1);
  assert.is(free!.defaultToolCost, 0.02);
  assert.is(free!.preCallEstimate, false);
  assert.is(free!.preCallBufferTokens, 4096n);
  assert.is(free!.defaultCostRate, undefined);
  assert.equal(free!.modelLimits, {});
  assert.is(pro!.softGateAt, 0.9);
  assert.is(pro!.hardGateAt, 0.95);
  assert.is(pro!.maxSpendPerPeriod, undefined);
});

t("keeps maps keyed by dotted model names", async ({ client }) => {
  const productId = product();
  const res = await client.createPlans({
    productId,
    plans: [
      {
        name: "maps",
        modelLimits: { "gpt-4.1": { maxTokensPerPeriod: 1_000_000n } },
        costRates: { "gpt-4.1": { input: 0.002, output: 0.008 }, "claude-3.5": { input: 0.003, output: 0.015 } },
        toolCosts: { "web.search": 0.01 },
        defaultCostRate: { input: 0.001, output: 0.002 },
      },
    ],
  });
  const [listed] = (await client.listPlans({ productId })).plans;
  assert.equal(listed!.modelLimits["gpt-4.1"]!.maxTokensPerPeriod, 1_000_000n);
  assert.equal(listed!.costRates["claude-3.5"]!.output, 0.015);
  assert.is(listed!.toolCosts["web.search"], 0.01);
  assert.is(listed!.defaultCostRate!.output, 0.002);
  assert.is(listed!.id, res.plans[0]!.id);
});

t("skips existing names, reports them, and refuses a request of duplicates only", async ({ client }) => {
  const productId = product();
  await client.createPlans({ productId, plans: [{ name: "a" }] });
  const res = await client.createPlans({ productId, plans: [{ name: "a" }, { name: "b" }, { name: "b" }] });
  assert.equal(res.plans.map((p) => p.name), ["b"]);
  assert.equal(res.duplicates, ["a", "b"]);
  const err = await failure(client.createPlans({ productId, plans: [{ name: "a" }, { name: "b" }] }));
  assert.is(err.code, Code.AlreadyExists);
  assert.is((await client.listPlans({ productId })).plans.length, 2);
  // Another product may use the same names.
  const other = await client.createPlans({ productId: product(), plans: [{ name: "a" }] });
  assert.is(other.plans.length, 1);
});

t("rejects invalid plans, naming each problem, and creates none of the request", async ({ client }) => {
  const productId = product();
  const cases: [string, Parameters<typeof client.createPlans>[0]][] = [
    ["soft_gate_at", { productId, plans: [{ name: "x", softGateAt: 1.5 }] }],
    ["hard_gate_at", { productId, plans: [{ name: "x", hardGateAt: -0.1 }] }],
    ["must not exceed", { productId, plans: [{ name: "x", softGateAt: 0.9, hardGateAt: 0.5 }] }],
    ["must not exceed", { productId, softGateAt: 0.9, hardGateAt: 0.5, plans: [{ name: "x" }] }],
    ["max_spend_per_period", { productId, plans: [{ name: "x", maxSpendPerPeriod: -1 }] }],
    ["max_spend_per_session", { productId, plans: [{ name: "x", maxSpendPerSession: Number.NaN }] }],
    ["session_timeout_minutes", { productId, plans: [{ name: "x", sessionTimeoutMinutes: 0 }] }],
    ["cost_rates.m.input", { productId, plans: [{ name: "x", costRates: { m: { input: -1, output: 0 } } }] }],
    ["tool_costs.t", { productId, plans: [{ name: "x", toolCosts: { t: -0.5 } }] }],
    ["max_tokens_per_period", { productId, plans: [{ name: "x", modelLimits: { m: { maxTokensPerPeriod: -5n } } }] }],
    ["pre_call_buffer_tokens", { productId, plans: [{ name: "x", preCallBufferTokens: -1n }] }],
    ["name", { productId, plans: [{ name: "" }] }],
    ["name", { productId, plans: [{}] }],
    ["name", { productId, plans: [{ name: "n".repeat(256) }] }],
    ["plans[1].default_tool_cost", { productId, plans: [{ name: "ok" }, { name: "y", defaultToolCost: -1 }] }],
    ["at least one", { productId, plans: [] }],
    ["product_id", { productId: "", plans: [{ name: "x" }] }],
  ];
  for (const [needle, req] of cases) {
    const err = await failure(client.createPlans(req));
    assert.is(err.code, Code.InvalidArgument, needle);
    assert.ok(err.rawMessage.includes(needle), `${needle} not in: ${err.rawMessage}`);
  }
  assert.equal((await client.listPlans({ productId })).plans, []);
});

t("updates only the fields in the mask; a named unset optional field clears it", async ({ client }) => {
  const productId = product();
  const [plan] = (
    await client.createPlans({ productId, plans: [{ name: "p", maxSpendPerPeriod: 10, maxSpendPerSession: 2, toolCosts: { t: 1 } }] })
  ).plans;
  const res = await client.updatePlan({
    productId,
    planId: plan!.id,
    plan: { maxSpendPerSession: 5, softGateAt: 0.7 },
    updateMask: { paths: ["max_spend_per_session", "max_spend_per_period"] },
  });
  assert.is(res.plan!.maxSpendPerSession, 5);
  assert.is(res.plan!.maxSpendPerPeriod, undefined, "cleared back to unlimited");
  assert.is(res.plan!.softGateAt, 0.8, "not in the mask, unchanged");
  assert.is(res.plan!.toolCosts.t, 1);
  assert.ok(fromTimestamp(res.plan!.updatedAt)!.getTime() >= fromTimestamp(plan!.updatedAt)!.getTime());
  const cleared = await client.updatePlan({ productId, planId: plan!.id, plan: {}, updateMask: { paths: ["tool_costs", "soft_gate_at"] } });
  assert.equal(cleared.plan!.toolCosts, {});
  assert.is(cleared.plan!.softGateAt, 0.8);
  const [listed] = (await client.listPlans({ productId })).plans;
  assert.is(listed!.maxSpendPerSession, 5);
});

t("refuses updates that leave the plan invalid, unknown fields and clearing the name", async ({ client }) => {
  const productId = product();
  const [plan] = (await client.createPlans({ productId, plans: [{ name: "p", hardGateAt: 0.9 }] })).plans;
  const bad = [
    { plan: { softGateAt: 0.95 }, updateMask: { paths: ["soft_gate_at"] } },
    { plan: {}, updateMask: { paths: ["colour"] } },
    { plan: {}, updateMask: { paths: ["name"] } },
  ];
  for (const b of bad) {
    const err = await failure(client.updatePlan({ productId, planId: plan!.id, ...b }));
    assert.is(err.code, Code.InvalidArgument, err.rawMessage);
  }
  const [listed] = (await client.listPlans({ productId })).plans;
  assert.is(listed!.softGateAt, 0.8);
});

t("renames a plan unless the name is taken", async ({ client }) => {
  const productId = product();
  const [a] = (await client.createPlans({ productId, plans: [{ name: "a" }, { name: "b" }] })).plans;
  const err = await failure(client.updatePlan({ productId, planId: a!.id, plan: { name: "b" }, updateMask: { paths: ["name"] } }));
  assert.is(err.code, Code.AlreadyExists);
  const ok = await client.updatePlan({ productId, planId: a!.id, plan: { name: "c" }, updateMask: { paths: ["name"] } });
  assert.is(ok.plan!.name, "c");
});

t("reads another product's plan, an unknown id or a malformed id as not found", async ({ client }) => {
  const [plan] = (await client.createPlans({ productId: product(), plans: [{ name: "mine" }] })).plans;
  for (const [productId, planId] of [
    [product(), plan!.id],
    [product(), randomUUID()],
    [product(), "not-a-uuid"],
    [product(), ""],
  ] as const) {
    const err = await failure(client.updatePlan({ productId, planId, plan: {}, updateMask: { paths: [] } }));
    assert.is(err.code, Code.NotFound);
  }
});

t("a plan write based on a stale version is refused, so the merge is redone", async ({ client, mongo, dbName }) => {
  const productId = product();
  const [plan] = (await client.createPlans({ productId, plans: [{ name: "p" }] })).plans;
  const store = new PlanStore(mongo.db(dbName));
  const stale = (await store.get(productId, plan!.id))!;
  await client.updatePlan({ productId, planId: plan!.id, plan: { maxSpendPerPeriod: 1 }, updateMask: { paths: ["max_spend_per_period"] } });
  assert.is(await store.replace(productId, stale, { ...stale, default_tool_cost: 3 }), "conflict");
  const [p] = (await client.listPlans({ productId })).plans;
  assert.is(p!.maxSpendPerPeriod, 1);
  assert.is(p!.defaultToolCost, 0.02);
  const sequential = await client.updatePlan({ productId, planId: plan!.id, plan: { defaultToolCost: 3 }, updateMask: { paths: ["default_tool_cost"] } });
  assert.is(sequential.plan!.maxSpendPerPeriod, 1);
  assert.is(sequential.plan!.defaultToolCost, 3);
});

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

t("many parallel creations of one plan name or one user yield exactly one record", async ({ client, mongo, dbName }) => {
  const productId = product();
  const plans = await Promise.allSettled(
    Array.from({ length: 20 }, () => client.createPlans({ productId, plans: [{ name: "race" }] })),
  );
  assert.is(plans.filter((r) => r.status === "fulfilled").length, 1);
  for (const r of plans) if (r.status === "rejected") assert.is(ConnectError.from(r.reason).code, Code.AlreadyExists);
  const users = await Promise.allSettled(
    Array.from({ length: 20 }, () => client.createUser({ productId, externalUserId: "racer" })),
  );
  assert.is(users.filter((r) => r.status === "fulfilled").length, 1);
  for (const r of users) if (r.status === "rejected") assert.is(ConnectError.from(r.reason).code, Code.AlreadyExists);
  assert.is(await mongo.db(dbName).collection("plans").countDocuments({ product_id: productId }), 1);
  assert.is(await mongo.db(dbName).collection("users").countDocuments({ product_id: productId }), 1);
});

t("creates and gets users; duplicates and bad ids are refused; products are isolated", async ({ client }) => {
  const productId = product();
  const weird = "a/b c?d#é🙂";
  const created = await client.createUser({ productId, externalUserId: weird, name: "Ann" });
  assert.is(created.user!.externalUserId, weird);
  assert.is(created.user!.planName, undefined);
  assert.is(created.user!.name, "Ann");
  const got = await client.getUser({ productId, externalUserId: weird });
  assert.is(got.user!.id, created.user!.id);
  assert.is((await failure(client.createUser({ productId, externalUserId: weird }))).code, Code.AlreadyExists);
  assert.is((await failure(client.createUser({ productId, externalUserId: "" }))).code, Code.InvalidArgument);
  assert.is((await failure(client.createUser({ productId, externalUserId: "x".repeat(256) }))).code, Code.InvalidArgument);
  const max = await client.createUser({ productId, externalUserId: "x".repeat(255) });
  assert.is(max.user!.externalUserId.length, 255);
  assert.is((await failure(client.getUser({ productId: product(), externalUserId: weird }))).code, Code.NotFound);
  // The same external id under another product is a different user.
  const other = await client.createUser({ productId: product(), externalUserId: weird });
  assert.is.not(other.user!.id, created.user!.id);
});

t("subscriptions: dates required for finite plans, optional otherwise, ordered, scoped", async ({ client }) => {
  const productId = product();
  const [capped, unlimited] = (
    await client.createPlans({ productId, plans: [{ name: "capped", maxSpendPerPeriod: 5 }, { name: "unlimited" }] })
  ).plans;
  await client.createUser({ productId, externalUserId: "u1" });

  const missing = await failure(client.setSubscription({ productId, externalUserId: "u1", planId: capped!.id }));
  assert.is(missing.code, Code.FailedPrecondition);
  const half = await failure(
    client.setSubscription({ productId, externalUserId: "u1", planId: capped!.id, periodStart: jan.periodStart }),
  );
  assert.is(half.code, Code.FailedPrecondition);
  const backwards = await failure(
    client.setSubscription({ productId, externalUserId: "u1", planId: capped!.id, periodStart: jan.periodEnd, periodEnd: jan.periodStart }),
  );
  assert.is(backwards.code, Code.InvalidArgument);
  const empty = await failure(
    client.setSubscription({ productId, externalUserId: "u1", planId: capped!.id, periodStart: jan.periodStart, periodEnd: jan.periodStart }),
  );
  assert.is(empty.code, Code.InvalidArgument);
  const oneDate = await failure(
    client.setSubscription({ productId, externalUserId: "u1", planId: unlimited!.id, periodEnd: jan.periodEnd }),
  );
  assert.is(oneDate.code, Code.InvalidArgument);

  const free = await client.setSubscription({ productId, externalUserId: "u1", planId: unlimited!.id });
  assert.is(free.user!.planName, "unlimited");
  assert.is(free.user!.billingSubscriptionId, undefined);
  const paid = await client.setSubscription({
    productId,
    externalUserId: "u1",
    planId: capped!.id.toUpperCase(),
    billingSubscriptionId: "sub_123",
    ...jan,
  });
  assert.is(paid.user!.planName, "capped");
  assert.is(paid.user!.billingSubscriptionId, "sub_123");
  assert.is((await client.getUser({ productId, externalUserId: "u1" })).user!.planName, "capped");

  assert.is((await failure(client.setSubscription({ productId, externalUserId: "nobody", planId: capped!.id, ...jan }))).code, Code.NotFound);
  assert.is((await failure(client.setSubscription({ productId, externalUserId: "u1", planId: randomUUID(), ...jan }))).code, Code.NotFound);
  assert.is((await failure(client.setSubscription({ productId, externalUserId: "u1", planId: "capped", ...jan }))).code, Code.NotFound);
  const [foreign] = (await client.createPlans({ productId: product(), plans: [{ name: "foreign" }] })).plans;
  assert.is((await failure(client.setSubscription({ productId, externalUserId: "u1", planId: foreign!.id }))).code, Code.NotFound);
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

t("concurrent subscription changes: the history has every change and ends with the current one", async ({ client }) => {
  const productId = product();
  const plans = (await client.createPlans({ productId, plans: Array.from({ length: 8 }, (_, i) => ({ name: `p${i}` })) })).plans;
  await client.createUser({ productId, externalUserId: "busy" });
  await Promise.all(plans.map((p) => client.setSubscription({ productId, externalUserId: "busy", planId: p.id })));
  const [r] = (await client.resolveUsers({ productId, externalUserIds: ["busy"] })).users;
  assert.is(r!.subscriptions.length, 8);
  assert.equal(new Set(r!.subscriptions.map((s) => s.planName)).size, 8);
  assert.is(r!.subscriptions.at(-1)!.planName, r!.user!.planName);
});

t("concurrent subscription changes of one user move the subscriber counts consistently", async ({ client }) => {
  const productId = product();
  const plans = (await client.createPlans({ productId, plans: Array.from({ length: 6 }, (_, i) => ({ name: `c${i}` })) })).plans;
  await client.createUser({ productId, externalUserId: "mover" });
  await client.createUser({ productId, externalUserId: "stayer" });
  await client.setSubscription({ productId, externalUserId: "stayer", planId: plans[0]!.id });
  await Promise.all(plans.map((p) => client.setSubscription({ productId, externalUserId: "mover", planId: p.id })));
  const current = (await client.getUser({ productId, externalUserId: "mover" })).user!.planName!;
  const counts = Object.fromEntries((await client.countSubscribers({ productId })).plans.map((p) => [p.planName, Number(p.subscriberCount)]));
  const expected = Object.fromEntries(plans.map((p) => [p.name, (p.name === current ? 1 : 0) + (p.name === "c0" ? 1 : 0)]));
  assert.equal(counts, expected);
});

t("counts subscribers per plan by current subscription, zero included", async ({ client }) => {
  const productId = product();
  const [a, b] = (await client.createPlans({ productId, plans: [{ name: "a" }, { name: "b" }, { name: "c" }] })).plans;
  for (const id of ["1", "2", "3", "4"]) await client.createUser({ productId, externalUserId: id });
  await client.setSubscription({ productId, externalUserId: "1", planId: a!.id });
  await client.setSubscription({ productId, externalUserId: "2", planId: a!.id });
  await client.setSubscription({ productId, externalUserId: "3", planId: a!.id });
  await client.setSubscription({ productId, externalUserId: "3", planId: b!.id });
  const res = await client.countSubscribers({ productId });
  assert.equal(
    res.plans.map((p) => [p.planName, Number(p.subscriberCount)]),
    [["a", 2], ["b", 1], ["c", 0]],
  );
  assert.equal((await client.countSubscribers({ productId: product() })).plans, []);
});

t("ListUsers: pages in external id order by prefix and by plan; bad limits and cursors are INVALID_ARGUMENT", async ({ client }) => {
  const productId = product();
  const other = product();
  const [gold, free] = (await client.createPlans({ productId, plans: [{ name: "gold" }, { name: "free" }] })).plans;
  const ids = ["b", "a", "a.1", "a\u{1F600}", "a\uffff", "c", "A"];
  for (const id of ids) await client.createUser({ productId, externalUserId: id });
  await client.createUser({ productId: other, externalUserId: "a-other" });
  const all = async (req: { prefix?: string; planName?: string; limit?: number }) => {
    const out: string[] = [];
    let cursor: string | undefined;
    do {
      const res = await client.listUsers({ productId, ...req, cursor });
      out.push(...res.users.map((u) => u.externalUserId));
      cursor = res.nextCursor;
    } while (cursor);
    return out;
  };
  const sorted = [...ids].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
  assert.equal(await all({ limit: 2 }), sorted);
  assert.equal(await all({ prefix: "a", limit: 1 }), ["a", "a.1", "a\uffff", "a\u{1F600}"]);
  assert.equal(await all({ prefix: "a." }), ["a.1"]);
  await client.setSubscription({ productId, externalUserId: "a", planId: gold!.id });
  await client.setSubscription({ productId, externalUserId: "c", planId: gold!.id });
  await client.setSubscription({ productId, externalUserId: "b", planId: free!.id });
  assert.equal(await all({ planName: "gold", limit: 1 }), ["a", "c"]);
  assert.equal(await all({ planName: "free" }), ["b"]);
  assert.equal(await all({ planName: "gold", prefix: "c" }), ["c"]);
  assert.equal(await all({ planName: "none such" }), []);
  const page = await client.listUsers({ productId, planName: "gold" });
  assert.equal(page.users.map((u) => u.planName), ["gold", "gold"]);
  for (const limit of [-1, 201]) assert.is((await failure(client.listUsers({ productId, limit }))).code, Code.InvalidArgument);
  assert.is((await client.listUsers({ productId })).users.length, ids.length, "limit 0 is the default page");
  assert.is((await failure(client.listUsers({ productId, cursor: "bogus" }))).code, Code.InvalidArgument);
  assert.is((await failure(client.listUsers({ productId: "" }))).code, Code.InvalidArgument);
});

t("ListUsers by plan: concurrent subscription changes leave every user listed under exactly its current plan", async ({ client, mongo, dbName }) => {
  const productId = product();
  const plans = (await client.createPlans({ productId, plans: [{ name: "p1" }, { name: "p2" }, { name: "p3" }] })).plans;
  const ids = Array.from({ length: 8 }, (_, i) => `u${i}`);
  for (const id of ids) await client.createUser({ productId, externalUserId: id });
  await Promise.all(
    ids.flatMap((id) => Array.from({ length: 6 }, (_, k) => client.setSubscription({ productId, externalUserId: id, planId: plans[(k + id.length) % 3]!.id }))),
  );
  // An entry left behind (as a crash between the writes would leave it) is not listed.
  await mongo.db(dbName).collection<{ _id: string; subs: string[] }>("plan_members").insertOne({ _id: `${productId}:${plans[0]!.id}:u-gone`, subs: ["x"] } as never);
  const byPlan = new Map<string, string[]>();
  for (const p of plans) {
    const res = await client.listUsers({ productId, planName: p!.name, limit: 200 });
    byPlan.set(p!.name, res.users.map((u) => u.externalUserId));
  }
  for (const id of ids) {
    const current = (await client.getUser({ productId, externalUserId: id })).user!.planName!;
    for (const [name, listed] of byPlan) assert.is(listed.includes(id), name === current, `${id} on ${current}, listed under ${name}`);
  }
});

t("ListUsers by plan: users subscribed before the member listing existed are listed after a start", async ({ mongo, dbName }) => {
  const logger = createLogger("plans-test", "silent");
  const peers = { tenancy: "", plans: "", ingestion: "", analytics: "", webhooks: "" };
  const db = mongo.db(`${dbName}_backfill`);
  const start = async () => {
    const module = await createPlansService({ db, logger, peers });
    const server = await serveRpc({ modules: [module], port: 0, logger });
    return { server, client: rpcClient(PlansService, server.url) };
  };
  const first = await start();
  const productId = product();
  const [plan] = (await first.client.createPlans({ productId, plans: [{ name: "old" }] })).plans;
  for (const id of ["x1", "x2"]) {
    await first.client.createUser({ productId, externalUserId: id });
    await first.client.setSubscription({ productId, externalUserId: id, planId: plan!.id });
  }
  await first.server.close();
  await db.collection("plan_members").drop();
  const second = await start();
  try {
    assert.equal((await second.client.listUsers({ productId, planName: "old" })).users.map((u) => u.externalUserId), ["x1", "x2"]);
  } finally {
    await second.server.close();
  }
});

t.run();
