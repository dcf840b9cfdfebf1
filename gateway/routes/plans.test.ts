import { suite } from "uvu";
import * as assert from "uvu/assert";
import { randomUUID } from "node:crypto";
import type { Api } from "../../test/support/http.ts";
import { withStack, type TestStack } from "../../test/support/stack.ts";

const t = suite<{ stack: TestStack; a: Api; b: Api }>("plan routes over HTTP");

withStack(t);
t.before(async (ctx) => {
  ctx.a = (await ctx.stack.newProduct("Plans A")).api;
  ctx.b = (await ctx.stack.newProduct("Plans B")).api;
});

const FULL_PLAN_KEYS = [
  "cost_rates",
  "created_at",
  "credits_enabled",
  "credits_low_at",
  "default_cost_rate",
  "default_tool_cost",
  "hard_gate_at",
  "id",
  "limits",
  "max_spend_per_period",
  "max_spend_per_session",
  "model_limits",
  "name",
  "pre_call_buffer_tokens",
  "pre_call_estimate",
  "session_timeout_minutes",
  "soft_gate_at",
  "time_zone",
  "tool_costs",
  "updated_at",
];

const unique = (base: string) => `${base}-${randomUUID().slice(0, 8)}`;

t("POST /config/plans creates plans with every default filled in (201)", async ({ a }) => {
  const name = unique("starter");
  const res = await a.post("/config/plans", { plans: [{ name }] });
  assert.is(res.status, 201, JSON.stringify(res.body));
  assert.equal(res.body.duplicates, []);
  const [plan] = res.body.plans;
  assert.equal(Object.keys(plan).sort(), FULL_PLAN_KEYS);
  assert.match(plan.id, /^[0-9a-f-]{36}$/);
  assert.is(plan.name, name);
  assert.is(plan.max_spend_per_period, null);
  assert.is(plan.max_spend_per_session, null);
  assert.is(plan.session_timeout_minutes, 30);
  assert.is(plan.soft_gate_at, 0.8);
  assert.is(plan.hard_gate_at, 1);
  assert.equal(plan.model_limits, {});
  assert.equal(plan.cost_rates, {});
  assert.is(plan.default_cost_rate, null);
  assert.equal(plan.tool_costs, {});
  assert.is(plan.default_tool_cost, 0.02);
  assert.is(plan.pre_call_estimate, false);
  assert.is(plan.pre_call_buffer_tokens, 4096);
  assert.equal(plan.limits, []);
  assert.is(plan.time_zone, "UTC");
  assert.ok(!Number.isNaN(Date.parse(plan.created_at)));
  assert.ok(!Number.isNaN(Date.parse(plan.updated_at)));
});

t("top-level gate thresholds apply to every plan unless overridden; every field round-trips", async ({ a }) => {
  const [x, y] = [unique("x"), unique("y")];
  const full = {
    name: y,
    max_spend_per_period: 25.5,
    max_spend_per_session: 2,
    session_timeout_minutes: 12.5,
    soft_gate_at: 0.6,
    hard_gate_at: 0.9,
    model_limits: { "gpt-4.1": { max_tokens_per_period: 100000 } },
    cost_rates: { "gpt-4.1": { input: 0.002, output: 0.008 } },
    default_cost_rate: { input: 0.001, output: 0.003 },
    tool_costs: { web_search: 0.05 },
    default_tool_cost: 0.01,
    pre_call_estimate: true,
    pre_call_buffer_tokens: 2048,
    limits: [{ name: "daily", metric: "spend", max: 1, window: "day", duration_minutes: null, model: null, soft_gate_at: null, hard_gate_at: null, scope: "member" }],
    time_zone: "Asia/Tokyo",
    credits_enabled: true,
    credits_low_at: 5,
  };
  const res = await a.post("/config/plans", { soft_gate_at: 0.7, hard_gate_at: 0.95, plans: [{ name: x }, full] });
  assert.is(res.status, 201, JSON.stringify(res.body));
  const [px, py] = res.body.plans;
  assert.is(px.soft_gate_at, 0.7);
  assert.is(px.hard_gate_at, 0.95);
  const { id, created_at, updated_at, ...rest } = py;
  assert.equal(rest, full);
  const listed = await a.get("/config/plans");
  assert.is(listed.status, 200);
  assert.equal(listed.body.plans.find((p: { id: string }) => p.id === id), py);
});

t("existing names are skipped and listed; 409 when every plan is a duplicate", async ({ a, b }) => {
  const [n1, n2] = [unique("dup1"), unique("dup2")];
  assert.is((await a.post("/config/plans", { plans: [{ name: n1 }] })).status, 201);
  const res = await a.post("/config/plans", { plans: [{ name: n1, max_spend_per_period: 99 }, { name: n2 }] });
  assert.is(res.status, 201);
  assert.equal(res.body.plans.map((p: { name: string }) => p.name), [n2]);
  assert.equal(res.body.duplicates, [n1]);
  const listed = await a.get("/config/plans");
  assert.is(listed.body.plans.find((p: { name: string }) => p.name === n1).max_spend_per_period, null, "not updated");
  const conflict = await a.post("/config/plans", { plans: [{ name: n1 }, { name: n2 }] });
  assert.is(conflict.status, 409);
  assert.match(conflict.body.detail, n1);
  // The same names are free in another product.
  assert.is((await b.post("/config/plans", { plans: [{ name: n1 }] })).status, 201);
});

t("many parallel creations of one name yield one plan and duplicate answers for the rest", async ({ a }) => {
  const name = unique("race");
  const results = await Promise.all(Array.from({ length: 16 }, () => a.post("/config/plans", { plans: [{ name }] })));
  assert.equal(results.filter((r) => r.status === 201).length, 1);
  assert.equal(results.filter((r) => r.status === 409).length, 15);
  const listed = await a.get("/config/plans");
  assert.is(listed.body.plans.filter((p: { name: string }) => p.name === name).length, 1);
});

t("names holding a line break (a CRLF file's) are validated and answered like any other", async ({ a }) => {
  const name = `crlf-${randomUUID()}`;
  const res = await a.post("/config/plans", { plans: [{ name, tool_costs: { "search\r": 0.05, web: 0.01 }, model_limits: { "gpt-4o\n": { max_tokens_per_period: 1000 } } }] });
  assert.is(res.status, 201, JSON.stringify(res.body));
  assert.equal(res.body.plans[0].tool_costs, { "search\r": 0.05, web: 0.01 });
  assert.equal(res.body.plans[0].model_limits, { "gpt-4o\n": { max_tokens_per_period: 1000 } });
  const listed = (await a.get("/config/plans")).body.plans.find((p: { name: string }) => p.name === name);
  assert.equal(listed.tool_costs, { "search\r": 0.05, web: 0.01 });
  for (const bad of [{ model_limits: { "m\n": { max_tokens_per_period: 1.5 } } }, { tool_costs: { "m\n": -1 } }, { cost_rates: { "m\n": { input: "x", output: -1 } } }]) {
    const refused = await a.post("/config/plans", { plans: [{ name: `bad-${randomUUID()}`, ...bad }] });
    assert.is(refused.status, 422, `${JSON.stringify(bad)}: ${refused.status} ${JSON.stringify(refused.body)}`);
  }
});

t("invalid plan bodies are 422 with a list of issues; nothing is created", async ({ a }) => {
  const name = unique("bad");
  const bodies: [unknown, string][] = [
    [{ plans: [{ name, soft_gate_at: 1.5 }] }, "/plans/0/soft_gate_at"],
    [{ plans: [{ name, hard_gate_at: -0.1 }] }, "/plans/0/hard_gate_at"],
    [{ soft_gate_at: 2, plans: [{ name }] }, "/soft_gate_at"],
    [{ plans: [{ name, max_spend_per_period: -1 }] }, "/plans/0/max_spend_per_period"],
    [{ plans: [{ name, max_spend_per_session: -1 }] }, "/plans/0/max_spend_per_session"],
    [{ plans: [{ name, cost_rates: { m: { input: -1, output: 1 } } }] }, "/plans/0/cost_rates/m/input"],
    // A rate no call's cost can be computed from (it overflows): every event of the plan would be refused.
    [{ plans: [{ name, cost_rates: { m: { input: 1e300, output: 1 } } }] }, "/plans/0/cost_rates/m/input"],
    [{ plans: [{ name, max_spend_per_period: 2e9 }] }, "/plans/0/max_spend_per_period"],
    [{ plans: [{ name, default_cost_rate: { input: 1 } }] }, "/plans/0/default_cost_rate/output"],
    [{ plans: [{ name, tool_costs: { t: -2 } }] }, "/plans/0/tool_costs/t"],
    [{ plans: [{ name, default_tool_cost: -2 }] }, "/plans/0/default_tool_cost"],
    [{ plans: [{ name, model_limits: { m: { max_tokens_per_period: 1.5 } } }] }, "/plans/0/model_limits/m/max_tokens_per_period"],
    [{ plans: [{ name, model_limits: { m: { max_tokens_per_period: -1 } } }] }, "/plans/0/model_limits/m/max_tokens_per_period"],
    [{ plans: [{ name, pre_call_buffer_tokens: 10.5 }] }, "/plans/0/pre_call_buffer_tokens"],
    [{ plans: [{ name, session_timeout_minutes: 0 }] }, "/plans/0/session_timeout_minutes"],
    [{ plans: [{ name: "" }] }, "/plans/0/name"],
    [{ plans: [{ name: "n".repeat(256) }] }, "/plans/0/name"],
    [{ plans: [{}] }, "/plans/0/name"],
    [{ plans: [] }, "/plans"],
    [{}, "/plans"],
    [{ plans: [{ name, colour: "blue" }] }, "/plans/0/colour"],
    [{ plans: [{ name }], extra: true }, "/extra"],
    [{ plans: [{ name, cost_rates: { m: { input: 1, output: 1, currency: "usd" } } }] }, "/plans/0/cost_rates/m/currency"],
    [{ plans: [{ name, soft_gate_at: "0.5" }] }, "/plans/0/soft_gate_at"],
  ];
  for (const [body, path] of bodies) {
    const res = await a.post("/config/plans", body);
    assert.is(res.status, 422, `${JSON.stringify(body)} -> ${res.status}`);
    assert.type(res.body.detail, "string");
    assert.ok(
      res.body.issues.some((i: { path: string }) => i.path === path),
      `${path} not in ${JSON.stringify(res.body.issues)}`,
    );
  }
  const listed = await a.get("/config/plans");
  assert.not.ok(listed.body.plans.some((p: { name: string }) => p.name === name));
});

t("soft_gate_at above hard_gate_at is refused with 400 naming both", async ({ a }) => {
  const name = unique("gates");
  for (const body of [
    { plans: [{ name, soft_gate_at: 0.9, hard_gate_at: 0.5 }] },
    { soft_gate_at: 0.9, hard_gate_at: 0.5, plans: [{ name }] },
    { hard_gate_at: 0.5, plans: [{ name }] },
  ]) {
    const res = await a.post("/config/plans", body);
    assert.is(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.detail, /soft_gate_at .* must not exceed .*hard_gate_at/);
  }
  const ok = await a.post("/config/plans", { plans: [{ name, soft_gate_at: 1, hard_gate_at: 1 }] });
  assert.is(ok.status, 201);
});

t("PATCH changes only the fields sent and returns the full plan", async ({ a }) => {
  const name = unique("patch");
  const created = await a.post("/config/plans", {
    plans: [{ name, max_spend_per_period: 10, max_spend_per_session: 1, tool_costs: { t: 0.5 }, default_cost_rate: { input: 1, output: 2 } }],
  });
  const plan = created.body.plans[0];
  const res = await a.patch(`/config/plans/${plan.id}`, { max_spend_per_session: 3, soft_gate_at: 0.5 });
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal(Object.keys(res.body).sort(), FULL_PLAN_KEYS);
  assert.is(res.body.max_spend_per_session, 3);
  assert.is(res.body.soft_gate_at, 0.5);
  assert.is(res.body.max_spend_per_period, 10);
  assert.equal(res.body.tool_costs, { t: 0.5 });
  assert.is(res.body.created_at, plan.created_at);
  assert.ok(Date.parse(res.body.updated_at) >= Date.parse(plan.updated_at));

  const cleared = await a.patch(`/config/plans/${plan.id}`, { max_spend_per_period: null, default_cost_rate: null, tool_costs: {} });
  assert.is(cleared.status, 200);
  assert.is(cleared.body.max_spend_per_period, null);
  assert.is(cleared.body.default_cost_rate, null);
  assert.equal(cleared.body.tool_costs, {});
  assert.is(cleared.body.max_spend_per_session, 3);

  const renamed = await a.patch(`/config/plans/${plan.id}`, { name: `${name}-2` });
  assert.is(renamed.body.name, `${name}-2`);
  const unchanged = await a.patch(`/config/plans/${plan.id}`, {});
  assert.is(unchanged.status, 200);
  assert.equal(unchanged.body, renamed.body);
  const listed = await a.get("/config/plans");
  assert.equal(listed.body.plans.find((p: { id: string }) => p.id === plan.id), renamed.body);
});

t("PATCH validation: 422 for shapes and unknown fields, 400 for crossed gates, 409 for a taken name", async ({ a }) => {
  const [n1, n2] = [unique("p1"), unique("p2")];
  const created = await a.post("/config/plans", { plans: [{ name: n1, hard_gate_at: 0.9 }, { name: n2 }] });
  const id = created.body.plans[0].id;
  for (const body of [{ soft_gate_at: 1.2 }, { colour: "red" }, { name: null }, { soft_gate_at: null }, { name: "" }, { max_spend_per_period: -3 }]) {
    const res = await a.patch(`/config/plans/${id}`, body);
    assert.is(res.status, 422, `${JSON.stringify(body)} -> ${res.status}`);
  }
  const crossed = await a.patch(`/config/plans/${id}`, { soft_gate_at: 0.95 });
  assert.is(crossed.status, 400);
  assert.match(crossed.body.detail, /must not exceed/);
  const taken = await a.patch(`/config/plans/${id}`, { name: n2 });
  assert.is(taken.status, 409);
});

t("PATCH of an unknown, malformed or another product's plan is 404", async ({ a, b }) => {
  const created = await a.post("/config/plans", { plans: [{ name: unique("mine") }] });
  const id = created.body.plans[0].id;
  for (const [api, planId] of [
    [b, id],
    [a, randomUUID()],
    [a, "not-a-uuid"],
    [a, "%20"],
    [a, "x".repeat(90)],
  ] as const) {
    const res = await api.patch(`/config/plans/${planId}`, { max_spend_per_period: 1 });
    assert.is(res.status, 404, `${planId} -> ${res.status}`);
    assert.type(res.body.detail, "string");
  }
  assert.is((await a.get("/config/plans")).body.plans.find((p: { id: string }) => p.id === id).max_spend_per_period, null);
});

t("products see only their own plans", async ({ stack }) => {
  const { api: c } = await stack.newProduct("Plans C");
  assert.equal((await c.get("/config/plans")).body, { plans: [] });
  await c.post("/config/plans", { plans: [{ name: "only-c" }] });
  assert.equal((await c.get("/config/plans")).body.plans.map((p: { name: string }) => p.name), ["only-c"]);
});

t("GET /config/changes: the marker moves with plan updates and subscription changes, and lists what changed", async ({ stack }) => {
  const { api } = await stack.newProduct("Changes");
  const { api: other } = await stack.newProduct("Changes, other product");
  assert.equal((await api.get("/config/changes")).body, { marker: 0, all: false, plan_ids: [], user_ids: [], team_ids: [] });
  const plan = (await api.post("/config/plans", { plans: [{ name: "p", max_spend_per_period: 5 }] })).body.plans[0];
  // Creating a plan or a user concerns no running client: the marker stays.
  await api.post("/users", { external_user_id: "u1" });
  await api.post("/users", { external_user_id: "u2" });
  const start = (await api.get("/config/changes")).body.marker;
  assert.is(start, 0);
  const period = { period_start: "2026-01-01T00:00:00Z", period_end: "2026-02-01T00:00:00Z" };
  assert.is((await api.post("/users/u1/subscription", { plan_id: plan.id, ...period })).status, 200);
  assert.is((await api.patch(`/config/plans/${plan.id}`, { max_spend_per_period: 2 })).status, 200);
  const after = (await api.get(`/config/changes?since=${start}`)).body;
  assert.equal(after, { marker: 2, all: false, plan_ids: [plan.id], user_ids: ["u1"], team_ids: [] });
  assert.equal((await api.get("/config/changes?since=1")).body, { marker: 2, all: false, plan_ids: [plan.id], user_ids: [], team_ids: [] });
  assert.equal((await api.get("/config/changes?since=2")).body, { marker: 2, all: false, plan_ids: [], user_ids: [], team_ids: [] });
  // A marker this service never gave (a replaced database): reload everything.
  assert.equal((await api.get("/config/changes?since=9")).body, { marker: 2, all: true, plan_ids: [], user_ids: [], team_ids: [] });
  assert.is((await api.get("/config/changes?since=-1")).status, 400);
  // Another product's changes are its own.
  assert.equal((await other.get("/config/changes?since=0")).body, { marker: 0, all: false, plan_ids: [], user_ids: [], team_ids: [] });
  assert.is((await stack.api.get("/config/changes")).status, 401);
});

t("GET /config/changes: a client too far behind is told to reload everything", async ({ stack }) => {
  const { api } = await stack.newProduct("Changes, many");
  const plan = (await api.post("/config/plans", { plans: [{ name: "p" }] })).body.plans[0];
  // More changes than are kept (200, trimmed past 400): the oldest markers are gone.
  for (let i = 0; i < 41; i++) {
    await Promise.all(Array.from({ length: 10 }, (_, j) => api.patch(`/config/plans/${plan.id}`, { default_tool_cost: (i * 10 + j) / 1000 })));
  }
  const now = (await api.get("/config/changes")).body.marker;
  assert.is(now, 410);
  assert.is((await api.get("/config/changes?since=1")).body.all, true);
  assert.equal((await api.get(`/config/changes?since=${now - 5}`)).body, { marker: now, all: false, plan_ids: [plan.id], user_ids: [], team_ids: [] });
});

t("plan routes need a valid key (401)", async ({ stack }) => {
  assert.is((await stack.api.get("/config/plans")).status, 401);
  assert.is((await stack.api.post("/config/plans", { plans: [{ name: "x" }] })).status, 401);
  assert.is((await stack.api.withKey("mk_" + "A".repeat(43)).patch(`/config/plans/${randomUUID()}`, {})).status, 401);
});

t("the OpenAPI document describes the plan and user routes", async ({ stack }) => {
  const doc = await stack.api.get("/openapi.json");
  assert.is(doc.status, 200, JSON.stringify(doc.body));
  assert.ok(doc.body.paths["/api/v1/config/plans"].post.requestBody);
  assert.ok(doc.body.paths["/api/v1/config/plans"].get);
  assert.ok(doc.body.paths["/api/v1/config/plans/{plan_id}"].patch.requestBody);
  assert.ok(doc.body.paths["/api/v1/config/changes"].get);
  // Readers of the reference are sent to the API guide.
  assert.match(doc.body.info.description, /docs\/api\.md/);
  assert.ok(doc.body.paths["/api/v1/users"].post);
  assert.ok(doc.body.paths["/api/v1/users/{user_id}/subscription"].post);
  assert.not.ok(Object.keys(doc.body.paths).some((p) => p.includes("*")), "the wildcard twin stays hidden");
});

t.run();
