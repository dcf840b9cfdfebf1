import { suite } from "uvu";
import * as assert from "uvu/assert";
import { randomUUID } from "node:crypto";
import type { Api } from "../../test/support/http.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";

interface Ctx {
  stack: TestStack;
  a: Api;
  b: Api;
  capped: { id: string; name: string };
  unlimited: { id: string; name: string };
  foreign: { id: string };
}

const t = suite<Ctx>("user routes over HTTP");

t.before(async (ctx) => {
  ctx.stack = await startTestStack();
  ctx.a = (await ctx.stack.newProduct("Users A")).api;
  ctx.b = (await ctx.stack.newProduct("Users B")).api;
  const plans = await ctx.a.post("/config/plans", {
    plans: [{ name: "capped", max_spend_per_period: 20 }, { name: "unlimited" }],
  });
  [ctx.capped, ctx.unlimited] = plans.body.plans;
  ctx.foreign = (await ctx.b.post("/config/plans", { plans: [{ name: "foreign" }] })).body.plans[0];
});

t.after(async (ctx) => {
  await ctx.stack.close();
});

const USER_KEYS = ["billing_subscription_id", "created_at", "external_user_id", "id", "name", "plan_name", "updated_at"];
const uid = (base = "user") => `${base}-${randomUUID().slice(0, 8)}`;
const sub = (id: string) => `/users/${encodeURIComponent(id)}/subscription`;
const JAN = { period_start: "2026-01-01T00:00:00.000Z", period_end: "2026-02-01T00:00:00.000Z" };

t("POST /users creates a user with plan_name null (201)", async ({ a }) => {
  const id = uid();
  const res = await a.post("/users", { external_user_id: id, name: "Ann" });
  assert.is(res.status, 201, JSON.stringify(res.body));
  assert.equal(Object.keys(res.body).sort(), USER_KEYS);
  assert.is(res.body.external_user_id, id);
  assert.is(res.body.name, "Ann");
  assert.is(res.body.plan_name, null);
  assert.is(res.body.billing_subscription_id, null);
  assert.match(res.body.id, /^[0-9a-f-]{36}$/);
  const anonymous = await a.post("/users", { external_user_id: uid() });
  assert.is(anonymous.status, 201);
  assert.is(anonymous.body.name, null);
  assert.is((await a.post("/users", { external_user_id: uid(), name: null })).status, 201);
});

t("POST /users answers 409 for a taken external_user_id, which stays free in other products", async ({ a, b }) => {
  const id = uid();
  assert.is((await a.post("/users", { external_user_id: id })).status, 201);
  const again = await a.post("/users", { external_user_id: id, name: "other" });
  assert.is(again.status, 409);
  assert.match(again.body.detail, id);
  assert.is((await b.post("/users", { external_user_id: id })).status, 201);
});

t("many parallel sign-ups of one user yield one user and 409 for the rest", async ({ a }) => {
  const id = uid("race");
  const results = await Promise.all(Array.from({ length: 16 }, () => a.post("/users", { external_user_id: id })));
  assert.is(results.filter((r) => r.status === 201).length, 1);
  assert.is(results.filter((r) => r.status === 409).length, 15);
});

t("POST /users validates its body (422)", async ({ a }) => {
  for (const body of [
    {},
    { external_user_id: "" },
    { external_user_id: "x".repeat(256) },
    { external_user_id: 42 },
    { external_user_id: uid(), name: "n".repeat(256) },
    { external_user_id: uid(), plan: "free" },
  ]) {
    const res = await a.post("/users", body);
    assert.is(res.status, 422, `${JSON.stringify(body)} -> ${res.status}`);
    assert.ok(Array.isArray(res.body.issues));
  }
  assert.is((await a.post("/users", { external_user_id: "x".repeat(255) })).status, 201);
});

t("subscribes a user; plan_name and billing_subscription_id are set (200)", async ({ a, capped, unlimited }) => {
  const id = uid();
  await a.post("/users", { external_user_id: id });
  const res = await a.post(sub(id), { plan_id: capped.id, billing_subscription_id: "sub_1", ...JAN });
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal(Object.keys(res.body).sort(), USER_KEYS);
  assert.is(res.body.plan_name, "capped");
  assert.is(res.body.billing_subscription_id, "sub_1");
  const moved = await a.post(sub(id), { plan_id: unlimited.id });
  assert.is(moved.status, 200);
  assert.is(moved.body.plan_name, "unlimited");
  assert.is(moved.body.billing_subscription_id, null);
  assert.is(moved.body.id, res.body.id);
});

t("unlimited plans take dates optionally; capped plans require both", async ({ a, capped, unlimited }) => {
  const id = uid();
  await a.post("/users", { external_user_id: id });
  assert.is((await a.post(sub(id), { plan_id: unlimited.id, ...JAN })).status, 200);
  assert.is((await a.post(sub(id), { plan_id: unlimited.id, period_start: null, period_end: null })).status, 200);
  for (const body of [
    { plan_id: capped.id },
    { plan_id: capped.id, period_start: JAN.period_start },
    { plan_id: capped.id, period_end: JAN.period_end },
    { plan_id: capped.id, period_start: null, period_end: null },
    { plan_id: capped.id, period_start: JAN.period_end, period_end: JAN.period_start },
    { plan_id: capped.id, period_start: JAN.period_start, period_end: JAN.period_start },
    { plan_id: unlimited.id, period_start: JAN.period_end, period_end: JAN.period_start },
  ]) {
    const res = await a.post(sub(id), body);
    assert.is(res.status, 400, `${JSON.stringify(body)} -> ${res.status}`);
    assert.match(res.body.detail, /period/);
  }
  const stillUnlimited = await a.post(sub(id), { plan_id: unlimited.id });
  assert.is(stillUnlimited.body.plan_name, "unlimited");
});

t("subscription 404s: unknown user, unknown plan, another product's plan or user", async ({ a, b, capped, foreign }) => {
  const id = uid();
  await a.post("/users", { external_user_id: id });
  const cases: [Api, string, unknown][] = [
    [a, sub(uid("ghost")), { plan_id: capped.id, ...JAN }],
    [a, sub(id), { plan_id: randomUUID(), ...JAN }],
    [a, sub(id), { plan_id: foreign.id }],
    [b, sub(id), { plan_id: foreign.id }],
  ];
  for (const [api, path, body] of cases) {
    const res = await api.post(path, body);
    assert.is(res.status, 404, `${path} ${JSON.stringify(body)} -> ${res.status}`);
    assert.type(res.body.detail, "string");
  }
});

t("subscription body: plan names, unknown fields and bad dates are 422", async ({ a, capped }) => {
  const id = uid();
  await a.post("/users", { external_user_id: id });
  for (const [body, path] of [
    [{ plan_id: "capped", ...JAN }, "/plan_id"],
    [{ ...JAN }, "/plan_id"],
    [{ plan_id: capped.id, ...JAN, reset: true }, "/reset"],
    [{ plan_id: capped.id, period_start: "January", period_end: JAN.period_end }, "/period_start"],
  ] as const) {
    const res = await a.post(sub(id), body);
    assert.is(res.status, 422, `${JSON.stringify(body)} -> ${res.status}`);
    assert.ok(res.body.issues.some((i: { path: string }) => i.path === path), JSON.stringify(res.body.issues));
  }
});

t("user_id in the path is opaque: slashes, spaces, unicode, reserved characters and 255 characters", async ({ a, unlimited }) => {
  const ids = [
    "org/team/user 1",
    "ünïcødé-用户-🙂",
    "a?b#c&d=e%f+g",
    "a..b",
    "y".repeat(255),
    "é".repeat(255),
    "/".repeat(255),
  ];
  for (const id of ids) {
    const created = await a.post("/users", { external_user_id: id });
    assert.is(created.status, 201, `${id}: ${JSON.stringify(created.body)}`);
    const res = await a.post(sub(id), { plan_id: unlimited.id });
    assert.is(res.status, 200, `${id}: ${res.status} ${JSON.stringify(res.body)}`);
    assert.is(res.body.external_user_id, id);
    assert.is(res.body.plan_name, "unlimited");
  }
  // Paths that are not a subscription, or ids no user can have, are not found.
  assert.is((await a.post(`/users/${"y".repeat(255)}/other`, { plan_id: unlimited.id })).status, 404);
  assert.is((await a.post(sub("z".repeat(256)), { plan_id: unlimited.id })).status, 404);
  // A different id that only differs in encoding is a different user.
  assert.is((await a.post(sub("org%2Fteam%2Fuser 1"), { plan_id: unlimited.id })).status, 404);
});

t("GET /users/{user_id} answers the user as the writes did; 404 for unknown ids and other products' users", async ({ a, b, stack, capped }) => {
  const id = `${uid()}/ünï code?&`;
  const created = await a.post("/users", { external_user_id: id, name: "Ada" });
  const before = await a.get(`/users/${encodeURIComponent(id)}`);
  assert.is(before.status, 200, JSON.stringify(before.body));
  assert.equal(before.body, created.body);
  const subscribed = await a.post(sub(id), { plan_id: capped.id, billing_subscription_id: "sub_9", ...JAN });
  const after = await a.get(`/users/${encodeURIComponent(id)}`);
  assert.equal(after.body, subscribed.body);
  assert.is(after.body.plan_name, "capped");
  assert.is((await a.get(`/users/${encodeURIComponent(uid())}`)).status, 404);
  assert.is((await b.get(`/users/${encodeURIComponent(id)}`)).status, 404);
  assert.is((await stack.api.get(`/users/${encodeURIComponent(id)}`)).status, 401);
});

t("subscription routes need a valid key (401)", async ({ stack, unlimited }) => {
  assert.is((await stack.api.post("/users", { external_user_id: "x" })).status, 401);
  assert.is((await stack.api.post(sub("x"), { plan_id: unlimited.id })).status, 401);
});

t.run();
