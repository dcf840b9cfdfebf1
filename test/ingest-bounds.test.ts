// What a store could refuse, or a counter could not hold, must neither lose a batch's other
// events nor turn them into duplicates that were never counted: names holding U+0000, a
// failing counter update, token counts near 2^53, a counter at its bound, thousands of models.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MongoClient } from "mongodb";
import { MAX_COUNTER_MODELS, MAX_COUNTER_TOKENS, OTHER_MODELS } from "../services/ingestion/domain/counter-bounds.ts";
import type { Api } from "./support/http.ts";
import { withTestStack, type TestStack } from "./support/stack.ts";

const t = suite<{ stack: TestStack; mongo: MongoClient }>("ingestion bounds: NUL names, failed counts, token and model bounds");

withTestStack(t);

const DAY = 86_400_000;
const near = (a: number, b: number, msg: string) => assert.ok(Math.abs(a - b) < 1e-9, `${msg}: ${a} != ${b}`);

function usage(user: string, fields: Record<string, unknown> = {}) {
  return { id: randomUUID(), user_id: user, timestamp: new Date().toISOString(), model: "gpt-4o", input_tokens: 10, output_tokens: 5, cost_total: 1, ...fields };
}

async function newUser(api: Api): Promise<string> {
  const user = `u-${randomUUID()}`;
  assert.is((await api.post("/users", { external_user_id: user })).status, 201);
  return user;
}

const counters = (stack: TestStack, mongo: MongoClient) => mongo.db(`${stack.dbPrefix}_ingestion`).collection<Record<string, any>>("counters");

t("a model name holding U+0000 is counted with the rest of its batch, once", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const user = await newUser(api);
  const batch = [usage(user), usage(user, { model: "x\u0000y" }), usage(user, { model: "claude" })];
  const first = await api.post("/events/batch", batch);
  assert.equal([first.status, first.body], [200, { accepted: 3, duplicates: 0 }]);
  const again = await api.post("/events/batch", batch);
  assert.equal(again.body, { accepted: 0, duplicates: 3 });
  const u = (await api.get(`/users/${user}/usage`)).body;
  near(u.total_cost, 3, "every event counted once");
  assert.equal(u.tokens_by_model, { "gpt-4o": 15, "x\u0000y": 15, claude: 15 });

  const manual = await api.post("/events", { user_id: user, model: "a\u0000b", cost: 2 });
  assert.is(manual.status, 201, JSON.stringify(manual.body));
  assert.is(manual.body.model, "a\u0000b");
  near((await api.get(`/users/${user}/usage`)).body.total_cost, 5, "the manual event counted");
});

t("a lease of a model named with U+0000 is granted and released", async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  const model = "x\u0000y";
  const plan = await api.post("/config/plans", { plans: [{ name: "capped", max_spend_per_period: 100, model_limits: { [model]: { max_tokens_per_period: 1000 } } }] });
  assert.is(plan.status, 201, JSON.stringify(plan.body));
  const user = await newUser(api);
  await api.post(`/users/${user}/subscription`, {
    plan_id: plan.body.plans[0].id,
    period_start: new Date(Date.now() - DAY).toISOString(),
    period_end: new Date(Date.now() + 20 * DAY).toISOString(),
  });
  const lease = await api.post(`/users/${user}/leases`, { holder: "h", need: 1, want: 10, model });
  assert.is(lease.status, 200, JSON.stringify(lease.body));
  assert.is(lease.body.lease.tokens.model, model);
  const released = await api.post(`/users/${user}/leases/h/release`, { used: 1, used_tokens: { [model]: 7 } });
  assert.is(released.status, 200, JSON.stringify(released.body));
  near(released.body.lease.granted, 1, "the lease keeps what was used");
  const doc = await counters(stack, mongo).findOne({ product_id: productId, user_id: user });
  assert.is(doc!.leases.h.tokens["x%00y"].granted, 7, "the model's tokens, under its encoded name");
});

t("lease releases naming models the plan does not cap add nothing to the counter", async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  const plan = await api.post("/config/plans", { plans: [{ name: "capped", max_spend_per_period: 100, model_limits: { m: { max_tokens_per_period: 1000 } } }] });
  const user = await newUser(api);
  await api.post(`/users/${user}/subscription`, {
    plan_id: plan.body.plans[0].id,
    period_start: new Date(Date.now() - DAY).toISOString(),
    period_end: new Date(Date.now() + 20 * DAY).toISOString(),
  });
  assert.is((await api.post(`/users/${user}/leases`, { holder: "h", need: 1, want: 10, model: "m" })).status, 200);
  for (let round = 0; round < 3; round++) {
    const used = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`junk-${round}-${i}`, 1]));
    const res = await api.post(`/users/${user}/leases/h/release`, { used: 1, used_tokens: { ...used, m: 5 } });
    assert.is(res.status, 200, JSON.stringify(res.body));
  }
  const doc = await counters(stack, mongo).findOne({ product_id: productId, user_id: user });
  assert.equal(Object.keys(doc!.leases.h.tokens), ["m"]);
  assert.is(doc!.leases.h.tokens.m.granted, 5);
});

t("a batch whose counting fails is counted by its retry, never answered as uncounted duplicates", async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  const user = await newUser(api);
  assert.is((await api.post("/events/batch", [usage(user)])).status, 200);
  const col = counters(stack, mongo);
  const counter = { product_id: productId, user_id: user };
  // A counter the database cannot add to (what any failing update of the counting step is).
  assert.is((await col.updateOne(counter, { $set: { cost_nano: "not a number" } })).modifiedCount, 1);
  const batch = [usage(user, { cost_total: 2 }), usage(user, { cost_total: 3 })];
  const failed = await api.post("/events/batch", batch);
  assert.ok(failed.status >= 500, `the failed count answers a retryable error, got ${failed.status}`);
  await col.updateOne(counter, { $set: { cost_nano: 1_000_000_000 } }); // $1, in the unit counters add
  const retry = await api.post("/events/batch", batch);
  assert.equal([retry.status, retry.body], [200, { accepted: 0, duplicates: 2 }]);
  near((await api.get(`/users/${user}/usage`)).body.total_cost, 6, "the retry counted what the failed request stored");
  assert.equal((await api.post("/events/batch", batch)).body, { accepted: 0, duplicates: 2 });
  near((await api.get(`/users/${user}/usage`)).body.total_cost, 6, "and only once");
});

t("token counts past an event's bound are refused, 2^53 and 2^53-1 included, naming the field", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const user = await newUser(api);
  for (const n of [2 ** 53, 2 ** 53 - 1, 1_000_000_001]) {
    const res = await api.post("/events/batch", [usage(user), usage(user, { input_tokens: n })]);
    assert.is(res.status, 422, `${n}: ${JSON.stringify(res.body)}`);
    assert.ok(res.body.issues.some((i: { path: string }) => i.path === "/1/input_tokens"), JSON.stringify(res.body.issues));
  }
  const total = await api.post("/events/batch", [usage(user, { total_tokens: 2 ** 52 })]);
  assert.is(total.status, 422, JSON.stringify(total.body));
  assert.equal(total.body.issues.map((i: { path: string }) => i.path), ["/0/total_tokens"]);
  const manual = await api.post("/events", { user_id: user, output_tokens: 2 ** 53 - 1 });
  assert.is(manual.status, 422, JSON.stringify(manual.body));
  assert.ok(manual.body.issues.some((i: { path: string }) => i.path === "/output_tokens"));
  // At the bound: accepted.
  const max = await api.post("/events/batch", [usage(user, { input_tokens: 1e9, output_tokens: 1e9 })]);
  assert.equal([max.status, max.body], [200, { accepted: 1, duplicates: 0 }]);
  assert.is((await api.get(`/users/${user}/usage`)).body.total_tokens, 2e9);
});

t("an event that would take a counter past its token bound refuses its batch before anything is stored", async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  const user = await newUser(api);
  assert.is((await api.post("/events/batch", [usage(user)])).status, 200);
  // A counter near its bound (a million events at the largest token counts).
  await counters(stack, mongo).updateOne({ product_id: productId, user_id: user }, { $set: { tokens: MAX_COUNTER_TOKENS - 20 } });
  const batch = [usage(user, { input_tokens: 10, output_tokens: 0 }), usage(user, { input_tokens: 10, output_tokens: 5 })];
  const refused = await api.post("/events/batch", batch);
  assert.is(refused.status, 422, JSON.stringify(refused.body));
  assert.equal(refused.body.issues.map((i: { path: string }) => i.path), ["/1/total_tokens"]);
  const fits = await api.post("/events/batch", batch.slice(0, 1));
  assert.equal(fits.body, { accepted: 1, duplicates: 0 }, "nothing of the refused batch was stored");
  assert.is((await api.get(`/users/${user}/usage`)).body.total_tokens, MAX_COUNTER_TOKENS - 10);
});

// The ingestion service checks a batch against the counter states it read for the batches of
// the last few seconds (BOUND_STATE_MS) where they decide it as a read now would; here the
// counter changes under it as another replica's batches would change it.
t("a counter filled with models or carried near its token bound meanwhile is read again before a batch is checked", async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  const user = await newUser(api);
  const counter = { product_id: productId, user_id: user };
  // The second batch reads the counter as it holds gpt-4o; the third is checked against that state.
  for (let i = 0; i < 2; i++) assert.is((await api.post("/events/batch", [usage(user)])).status, 200);
  const others = Object.fromEntries(Array.from({ length: MAX_COUNTER_MODELS - 1 }, (_, i) => [`tokens_by_model.o${i}`, 1]));
  await counters(stack, mongo).updateOne(counter, { $set: others });
  assert.is((await api.post("/events/batch", [usage(user, { model: "new" })])).status, 200);
  let u = (await api.get(`/users/${user}/usage`)).body;
  assert.is(u.tokens_by_model.new, undefined, "a model the state did not hold sent the check to the counter, which was full");
  assert.is(u.tokens_by_model[OTHER_MODELS], 15);

  // Near half the bound, what others added since the read may decide: the counter is read again.
  const second = await newUser(api);
  assert.is((await api.post("/events/batch", [usage(second)])).status, 200);
  await counters(stack, mongo).updateOne({ product_id: productId, user_id: second }, { $set: { tokens: MAX_COUNTER_TOKENS / 2 - 10 } });
  assert.is((await api.post("/events/batch", [usage(second)])).status, 200);
  await counters(stack, mongo).updateOne({ product_id: productId, user_id: second }, { $set: { tokens: MAX_COUNTER_TOKENS - 20 } });
  const refused = await api.post("/events/batch", [usage(second, { input_tokens: 20, output_tokens: 5 })]);
  assert.is(refused.status, 422, JSON.stringify(refused.body));
  u = (await api.get(`/users/${second}/usage`)).body;
  assert.is(u.total_tokens, MAX_COUNTER_TOKENS - 20, "nothing of the refused batch was counted");
});

t(`a user's counter keeps ${MAX_COUNTER_MODELS} models apart and counts the rest as "${OTHER_MODELS}", except capped ones`, async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  const plan = await api.post("/config/plans", { plans: [{ name: "p", model_limits: { capped: { max_tokens_per_period: 1e12 } } }] });
  const user = await newUser(api);
  await api.post(`/users/${user}/subscription`, { plan_id: plan.body.plans[0].id });
  const n = MAX_COUNTER_MODELS + 50;
  const first = Array.from({ length: n }, (_, i) => usage(user, { model: `m${i}`, cost_total: 1 }));
  assert.equal((await api.post("/events/batch", first)).body, { accepted: n, duplicates: 0 });
  // A later batch: known models keep their own figure, new ones fold, a capped one never does.
  const later = [usage(user, { model: "m0" }), usage(user, { model: "new" }), usage(user, { model: "capped" })];
  assert.equal((await api.post("/events/batch", later)).body, { accepted: 3, duplicates: 0 });
  const u = (await api.get(`/users/${user}/usage`)).body;
  near(u.total_cost, n + 3, "totals stay exact");
  assert.is(u.tokens_by_model.m0, 30);
  assert.is(u.tokens_by_model[`m${MAX_COUNTER_MODELS - 1}`], 15);
  assert.is(u.tokens_by_model[`m${MAX_COUNTER_MODELS}`], undefined);
  assert.is(u.tokens_by_model.new, undefined);
  assert.is(u.tokens_by_model.capped, 15);
  assert.is(u.tokens_by_model[OTHER_MODELS], 15 * 51);
  near(u.cost_by_model[OTHER_MODELS], 51, "cost folds alike");
  const doc = await counters(stack, mongo).findOne({ product_id: productId, user_id: user });
  assert.is(Object.keys(doc!.tokens_by_model).length, MAX_COUNTER_MODELS + 2);
});

t.run();
