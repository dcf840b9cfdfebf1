// Batches shaped as clients in the field send them: fields beside the event schemas, zone
// spellings, nested metadata. Unknown fields are ignored and counted; known ones still checked.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { eventually } from "../../test/support/eventually.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";

const t = suite<{ stack: TestStack }>("ingestion from clients in the field");

t.before(async (ctx) => {
  ctx.stack = await startTestStack({ services: { ingestion: { relayIntervalMs: 50 }, analytics: { rollIntervalMs: 100 } } });
});
t.after(async (ctx) => {
  await ctx.stack.close();
});

const close = (a: number, b: number, msg = "") => assert.ok(Math.abs(a - b) < 1e-9, `${msg} ${a} != ${b}`);

async function ignored(stack: TestStack, route: string): Promise<number> {
  const text = await (await fetch(`${stack.rpcUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`meter_http_ignored_fields_total{route="${route}"} `));
  return line ? Number(line.split(" ")[1]) : 0;
}

/** A UTC time this month, 10 minutes ago, in the spellings clients use. */
function spellings(): string[] {
  const d = new Date(Date.now() - 10 * 60_000);
  const base = d.toISOString().slice(0, 19);
  return [`${base}+00:00`, base, `${base}.123456Z`, `${base.replace("T", " ")}+0000`];
}

t("usage events with source, description, cost_explicit and other fields are stored, counted exactly and told apart by source", async ({ stack }) => {
  const { api } = await stack.newProduct();
  assert.is((await api.post("/users", { external_user_id: "field-user" })).status, 201);
  const times = spellings();
  const events = Array.from({ length: 12 }, (_, i) => ({
    id: randomUUID(),
    user_id: "field-user",
    session_id: null,
    timestamp: times[i % times.length],
    model: "gpt-4o",
    input_tokens: 100 + i,
    output_tokens: 10 * i,
    total_tokens: 100 + 11 * i,
    tool_calls: [],
    cost_tokens: 0.01 * (i + 1),
    cost_tools: 0,
    cost_total: 0.01 * (i + 1),
    metadata: { request: { route: "/chat", tags: ["a", "b"], nested: { deep: { deeper: 1 } } } },
    source: i % 3 === 0 ? "manual" : "auto",
    description: i % 3 === 0 ? `adjustment ${i}` : null,
    cost_explicit: true,
    synced: false,
    sdk_name: "other-client",
  }));
  const before = await ignored(stack, "/api/v1/events/batch");
  const res = await api.post("/events/batch", events);
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body, { accepted: 12, duplicates: 0 });
  // cost_explicit and sdk_name on each event: 24 fields ignored, counted for the route.
  assert.is((await ignored(stack, "/api/v1/events/batch")) - before, 24);

  const cost = events.reduce((s, e) => s + e.cost_total, 0);
  const manual = events.filter((e) => e.source === "manual").reduce((s, e) => s + e.cost_total, 0);
  const tokens = events.reduce((s, e) => s + e.total_tokens, 0);
  const usage = await api.get("/users/field-user/usage");
  close(usage.body.total_cost, cost, "usage total");
  assert.is(usage.body.total_tokens, tokens);

  // Analytics counts the manual ones as manual events.
  const bySource = await eventually(async () => {
    const [all, man, auto] = await Promise.all(["", "&source=manual", "&source=auto"].map((q) => api.get(`/analytics/summary?days=7${q}`)));
    return all!.body.total_events === 12 ? { all: all!.body, man: man!.body, auto: auto!.body } : null;
  }, 30_000, "analytics to count the batch");
  close(bySource.all.total_cost, cost, "analytics total");
  assert.is(bySource.man.total_events, 4);
  close(bySource.man.total_cost, manual, "manual");
  assert.is(bySource.auto.total_events, 8);
  close(bySource.auto.total_cost, cost - manual, "auto");
});

t("gate events with a client's own user id field and manual events with extra fields are accepted", async ({ stack }) => {
  const { api } = await stack.newProduct();
  await api.post("/users", { external_user_id: "g-user" });
  const gateBefore = await ignored(stack, "/api/v1/gate-events/batch");
  const gate = await api.post("/gate-events/batch", [
    {
      id: randomUUID(),
      user_id: "g-user",
      customer_user_id: "cust_981",
      timestamp: spellings()[0],
      status: "soft_gate",
      gate_reason: "total_spend",
      usage_pct: 0.82,
      current_value: 8.2,
      limit_value: 10,
      metadata: { a: { b: [1, 2, { c: null }] } },
    },
  ]);
  assert.is(gate.status, 200, JSON.stringify(gate.body));
  assert.equal(gate.body, { accepted: 1, duplicates: 0 });
  assert.is((await ignored(stack, "/api/v1/gate-events/batch")) - gateBefore, 1);
  const listed = await api.get("/users/g-user/gate-events");
  assert.is(listed.body.events.length, 1, JSON.stringify(listed.body));

  const manual = await api.post("/events", { user_id: "g-user", cost: 0.5, source: "manual", client_ref: "r-1" });
  assert.is(manual.status, 201, JSON.stringify(manual.body));
  assert.is(manual.body.source, "manual");
  close((await api.get("/users/g-user/usage")).body.total_cost, 0.5);
});

t("fields the schemas know keep their validation: the detail names the event's index", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const ok = { id: randomUUID(), user_id: "v", timestamp: new Date().toISOString(), extra: 1 };
  const cases: [unknown[], string][] = [
    [[ok, { ...ok, id: randomUUID(), input_tokens: "12" }], "/1/input_tokens"],
    [[{ ...ok, id: undefined }], "/0/id"],
    [[ok, ok, { ...ok, id: randomUUID(), source: "imported" }], "/2/source"],
    [[{ ...ok, id: randomUUID(), description: 7 }], "/0/description"],
  ];
  for (const [batch, path] of cases) {
    const res = await api.post("/events/batch", batch);
    assert.is(res.status, 422, path);
    assert.ok(res.body.issues.some((i: { path: string }) => i.path === path), `${path}: ${res.body.detail}`);
    assert.match(res.body.detail, new RegExp(path.replaceAll("/", "\\/")));
  }
  const gate = await api.post("/gate-events/batch", [{ id: randomUUID(), user_id: "v", timestamp: new Date().toISOString(), status: "stuck", x: 1 }]);
  assert.is(gate.status, 422);
  assert.ok(gate.body.issues.some((i: { path: string }) => i.path === "/0/status"));
  assert.not.ok(gate.body.issues.some((i: { path: string }) => i.path === "/0/x"));
});

t("configuration routes keep refusing unknown fields", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const typo = await api.post("/config/plans", { plans: [{ name: "p", max_spend_per_perod: 10 }] });
  assert.is(typo.status, 422);
  assert.ok(typo.body.issues.some((i: { path: string; message: string }) => i.path === "/plans/0/max_spend_per_perod" && i.message === "is not a known field"));
  assert.is((await api.post("/users", { external_user_id: "x", nickname: "y" })).status, 422);
  assert.is((await api.post("/keys", { name: "k", role: "admin" })).status, 422);
  assert.is((await api.post("/webhooks/endpoints", { url: "https://example.com", subscribed_events: [], secret: "s" })).status, 422);
});

t("the session view omits unlimited caps instead of sending null", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const plans = await api.post("/config/plans", { plans: [{ name: "capped", max_spend_per_period: 25 }, { name: "open" }] });
  const [capped, open] = plans.body.plans as { id: string }[];
  const now = new Date();
  const period = {
    period_start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
    period_end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
  };
  for (const [user, plan] of [["c", capped!], ["o", open!]] as const) {
    await api.post("/users", { external_user_id: user });
    assert.is((await api.post(`/users/${user}/subscription`, { plan_id: plan.id, ...period })).status, 200);
  }
  const c = (await api.get("/users/c/session")).body.plan_config;
  assert.is(c.max_spend_per_period, 25);
  assert.not.ok("max_spend_per_session" in c);
  assert.not.ok("default_cost_rate" in c);
  const o = (await api.get("/users/o/session")).body.plan_config;
  for (const cap of ["max_spend_per_period", "max_spend_per_session", "default_cost_rate"]) assert.not.ok(cap in o, cap);
  assert.not.ok(Object.values(o).includes(null));
});

t.run();
