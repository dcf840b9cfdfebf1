// Plan limits (plans per product, bytes of a product's plans, entries and name lengths of the
// maps, body size) and one product's plan listing while a neighbour sits at every limit.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connectMongo } from "@meter/lib/mongo";
import { PlanStore } from "../services/plans/store/plans.ts";
import type { Api } from "./support/http.ts";
import { testMongoUrl } from "./support/database.ts";
import { startTestStack, type TestStack } from "./support/stack.ts";

const t = suite<{ stack: TestStack }>("plan limits");
const PLANS_PER_PRODUCT = 50;
/** LIMITS.planBytesPerProduct: a product's plans together, as JSON. */
const PLAN_BYTES = 1024 * 1024;

t.before(async (ctx) => {
  ctx.stack = await startTestStack();
});
t.after(async (ctx) => {
  await ctx.stack.close();
});

/** A plan with its three maps full: 1,000 names of 255 characters each. */
function fullPlan(name: string) {
  const names = Array.from({ length: 1000 }, (_, i) => `${name}-${String(i).padStart(4, "0")}-`.padEnd(255, "x"));
  return {
    name,
    cost_rates: Object.fromEntries(names.map((n) => [n, { input: 1, output: 2 }])),
    model_limits: Object.fromEntries(names.map((n) => [n, { max_tokens_per_period: 1000 }])),
    tool_costs: Object.fromEntries(names.map((n) => [n, 0.5])),
  };
}

/** About 280 KB as JSON (cost_rates full): three fit in a product's 1 MiB, a fourth does not. */
function largePlan(name: string) {
  return { name, cost_rates: fullPlan(name).cost_rates };
}

const names = (res: { body: { plans: { name: string }[] } }) => res.body.plans.map((p) => p.name);

async function plansOf(api: Api): Promise<string[]> {
  const res = await api.get("/config/plans");
  assert.is(res.status, 200);
  return names(res);
}

t("a neighbour at every limit: another product's plans read as they are, and the limits hold", async ({ stack }) => {
  const other = (await stack.newProduct("other")).api;
  const mine = [{ name: "basic", max_spend_per_period: 5, cost_rates: { "gpt-4o": { input: 2.5, output: 10 } } }, { name: "pro" }];
  assert.is((await other.post("/config/plans", { plans: mine })).status, 201);

  const neighbour = (await stack.newProduct("neighbour")).api;
  const full = await neighbour.post("/config/plans", { plans: [fullPlan("full-0")] });
  assert.is(full.status, 201, JSON.stringify(full.body).slice(0, 300));
  // One full plan takes about 800 KB of the product's 1 MiB: a second does not fit.
  const second = await neighbour.post("/config/plans", { plans: [fullPlan("full-1")] });
  assert.is(second.status, 422, JSON.stringify(second.body).slice(0, 300));
  assert.is(second.body.issues[0].path, "/plans");
  assert.match(second.body.detail, new RegExp(`at most ${PLAN_BYTES} per product`));
  const small = Array.from({ length: PLANS_PER_PRODUCT - 1 }, (_, i) => ({ name: `small-${i}` }));
  assert.is((await neighbour.post("/config/plans", { plans: small })).status, 201);

  const beyond = await neighbour.post("/config/plans", { plans: [{ name: "one-more" }] });
  assert.is(beyond.status, 422, JSON.stringify(beyond.body));
  assert.is(beyond.body.issues[0].path, "/plans");
  assert.match(beyond.body.detail, /at most 50 per product \(it has 50\)/);
  const listed = await neighbour.get("/config/plans");
  assert.is(listed.body.plans.length, PLANS_PER_PRODUCT);
  assert.is(Object.keys(listed.body.plans[0].cost_rates).length, 1000);
  // Full: a duplicate is still a duplicate (409), a new name is refused for the limit (422).
  const again = await neighbour.post("/config/plans", { plans: [{ name: "small-0" }] });
  assert.is(again.status, 409, "every plan a duplicate: 409 (SPEC), full or not");
  const mixed = await neighbour.post("/config/plans", { plans: [{ name: "small-0" }, { name: "one-more" }] });
  assert.is(mixed.status, 422, "a new name has no place");

  const res = await other.get("/config/plans");
  assert.is(res.status, 200);
  assert.equal(names(res), ["basic", "pro"]);
  assert.equal(res.body.plans[0].cost_rates, { "gpt-4o": { input: 2.5, output: 10 } });
  assert.is(res.body.plans[0].max_spend_per_period, 5);
});

t("map entries, name lengths and body size", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const long = "m".repeat(256);
  const cases: [string, unknown, RegExp][] = [
    ["a key of 256 characters", { name: "k", cost_rates: { [long]: { input: 1, output: 1 } } }, /\/plans\/0\/cost_rates/],
    ["an empty key", { name: "k", tool_costs: { "": 1 } }, /\/plans\/0\/tool_costs/],
    ["1,001 entries", { name: "k", model_limits: Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`m${i}`, { max_tokens_per_period: 1 }])) }, /\/plans\/0\/model_limits must NOT have more than 1000 properties/],
    ["a name of 256 characters", { name: "n".repeat(256) }, /\/plans\/0\/name/],
  ];
  for (const [what, plan, detail] of cases) {
    const res = await api.post("/config/plans", { plans: [plan] });
    assert.is(res.status, 422, what);
    assert.match(res.body.detail, detail, what);
  }
  const plan = (await api.post("/config/plans", { plans: [{ name: "ok" }] })).body.plans[0];
  const patched = await api.patch(`/config/plans/${plan.id}`, { tool_costs: { [long]: 1 } });
  assert.is(patched.status, 422, "PATCH too");

  // Two full plans in one request are over the 1 MiB body limit.
  const tooBig = await api.post("/config/plans", { plans: [fullPlan("a"), fullPlan("b")] });
  assert.is(tooBig.status, 413, JSON.stringify(tooBig.body));
  const tooBigPatch = await api.request("PATCH", `/config/plans/${plan.id}`, { rawBody: JSON.stringify({ description: "x".repeat(1_100_000) }) });
  assert.is(tooBigPatch.status, 413);
  assert.equal(await plansOf(api), ["ok"]);
});

t("a product's plans together stay within 1 MiB: creations and changes past it are refused, shrinking frees room", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const [a] = (await api.post("/config/plans", { plans: [largePlan("a")] })).body.plans;
  assert.is((await api.post("/config/plans", { plans: [largePlan("b"), largePlan("c")] })).status, 201);
  const fourth = await api.post("/config/plans", { plans: [largePlan("d")] });
  assert.is(fourth.status, 422, JSON.stringify(fourth.body).slice(0, 300));
  assert.match(fourth.body.detail, /^body\/plans would take the product's plans to \d+ bytes of JSON; at most 1048576 per product/);

  // A change that grows past it is refused and changes nothing; one that shrinks always passes.
  const grow = await api.patch(`/config/plans/${a.id}`, { model_limits: fullPlan("a").model_limits });
  assert.is(grow.status, 422, JSON.stringify(grow.body).slice(0, 300));
  assert.match(grow.body.detail, /at most 1048576 per product/);
  const stored = (await api.get("/config/plans")).body.plans.find((p: { id: string }) => p.id === a.id);
  assert.equal(stored.model_limits, {});
  assert.is((await api.patch(`/config/plans/${a.id}`, { cost_rates: {}, tool_costs: {} })).status, 200);
  // The room it freed is counted back: the fourth fits now.
  assert.is((await api.post("/config/plans", { plans: [largePlan("d")] })).status, 201);
  assert.equal(await plansOf(api), ["a", "b", "c", "d"]);
});

t("concurrent creations of large plans never take a product past its bytes", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const statuses = (await Promise.all(Array.from({ length: 6 }, (_, i) => api.post("/config/plans", { plans: [largePlan(`p${i}`)] })))).map((r) => r.status).sort();
  assert.equal(statuses, [201, 201, 201, 422, 422, 422]);
  assert.is((await plansOf(api)).length, 3);
});

t("concurrent creations never take a product past its limit", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const tooMany = await api.post("/config/plans", { plans: Array.from({ length: PLANS_PER_PRODUCT + 1 }, (_, i) => ({ name: `many-${i}` })) });
  assert.is(tooMany.status, 422, "more than a product's plans in one request");
  assert.equal(await plansOf(api), []);
  const requests = Array.from({ length: 8 }, (_, r) =>
    api.post("/config/plans", { plans: Array.from({ length: 10 }, (_, i) => ({ name: `r${r}-p${i}` })) }),
  );
  const statuses = (await Promise.all(requests)).map((r) => r.status).sort();
  assert.equal(statuses, [201, 201, 201, 201, 201, 422, 422, 422]);
  assert.is((await plansOf(api)).length, PLANS_PER_PRODUCT);
});

t("the whole catalogue posted again: its plans are duplicates, not counted again against the limits", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const catalogue = Array.from({ length: 26 }, (_, i) => ({ name: `p${i}` }));
  assert.is((await api.post("/config/plans", { plans: catalogue })).status, 201);
  const again = await api.post("/config/plans", { plans: catalogue });
  assert.is(again.status, 409, JSON.stringify(again.body));
  const grown = await api.post("/config/plans", { plans: [...catalogue, { name: "p26" }] });
  assert.is(grown.status, 201, JSON.stringify(grown.body));
  assert.equal(grown.body.plans.map((p: { name: string }) => p.name), ["p26"]);
  assert.equal(grown.body.duplicates, catalogue.map((p) => p.name));
  assert.is((await plansOf(api)).length, 27);
});

t("plans stored before the per-product directory existed are listed and counted", async ({ stack }) => {
  const { api, productId } = await stack.newProduct();
  const mongo = await connectMongo(await testMongoUrl());
  try {
    // As the previous version stored a plan: no directory entry.
    const created = (await api.post("/config/plans", { plans: [{ name: "template" }] })).body.plans[0];
    const db = mongo.db(`${stack.dbPrefix}_plans`);
    const doc = await db.collection("plans").findOne({ _id: created.id });
    const oldId = `0190${randomUUID().slice(4)}`;
    await db.collection("plans").insertOne({ ...doc!, _id: oldId, name: "legacy", created_at: new Date(0) } as never);
    await db.collection("plan_directory").deleteOne({ _id: productId } as never);
    assert.equal(await plansOf(api), ["legacy", "template"]);
    // A directory of the version before bytes were counted: its plans are counted once.
    await db.collection("plan_directory").updateOne({ _id: productId } as never, { $unset: { bytes: "" } });
    assert.is((await api.post("/config/plans", { plans: [largePlan("big-1"), largePlan("big-2"), largePlan("big-3")] })).status, 201);
    assert.is((await api.post("/config/plans", { plans: [largePlan("big-4")] })).status, 422, "counted with the plans before");
    await db.collection("plan_directory").updateOne({ _id: productId } as never, { $unset: { bytes: "" } });
    const fill = Array.from({ length: PLANS_PER_PRODUCT - 5 }, (_, i) => ({ name: `f${i}` }));
    assert.is((await api.post("/config/plans", { plans: fill })).status, 201);
    assert.is((await api.post("/config/plans", { plans: [{ name: "over" }] })).status, 422);
  } finally {
    await mongo.close();
  }
});

t("a listing kept by one plans replica shows every change made through another at once", async ({ stack }) => {
  const { api, productId } = await stack.newProduct();
  const mongo = await connectMongo(await testMongoUrl());
  try {
    // A second replica on the same database; the stack's plans service is the first.
    const replica = new PlanStore(mongo.db(`${stack.dbPrefix}_plans`));
    const basic = (await api.post("/config/plans", { plans: [{ name: "basic", tool_costs: { search: 1 } }] })).body.plans[0];
    assert.equal((await replica.list(productId)).map((p) => p.name), ["basic"]);
    assert.equal((await replica.list(productId)).map((p) => p.name), ["basic"], "kept");
    assert.is((await api.patch(`/config/plans/${basic.id}`, { name: "starter", tool_costs: { search: 2 } })).status, 200);
    const [changed] = await replica.list(productId);
    assert.equal([changed!.name, changed!.tool_costs], ["starter", { search: 2 }]);
    assert.is((await api.post("/config/plans", { plans: [{ name: "pro" }] })).status, 201);
    assert.equal((await replica.list(productId)).map((p) => p.name), ["starter", "pro"]);
  } finally {
    await mongo.close();
  }
});

t.run();
