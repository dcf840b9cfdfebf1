import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { connectMongo } from "@meter/lib/mongo";
import { decodeMetadata } from "../../services/ingestion/domain/field-keys.ts";
import { testMongoUrl } from "../../test/support/database.ts";
import { METADATA_MAX_DEPTH } from "@meter/rules";
import type { Api } from "../../test/support/http.ts";
import { gateEventJson } from "../../test/support/rest.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";

const t = suite<{ stack: TestStack }>("usage ingestion over HTTP");

t.before(async (ctx) => {
  ctx.stack = await startTestStack({ services: { ingestion: { relayIntervalMs: 50 } } });
});
t.after(async (ctx) => {
  await ctx.stack.close();
});

const close = (a: number, b: number, msg?: string) => assert.ok(Math.abs(a - b) < 1e-6, `${msg ?? ""} ${a} != ${b}`);

async function planAndUser(api: Api, plan: Record<string, unknown>, userId = `u-${randomUUID()}`, dates?: { start: Date; end: Date }) {
  const plans = await api.post("/config/plans", { plans: [{ name: `p-${randomUUID()}`, ...plan }] });
  assert.is(plans.status, 201, JSON.stringify(plans.body));
  const planId = plans.body.plans[0].id;
  const u = await api.post("/users", { external_user_id: userId });
  assert.is(u.status, 201, JSON.stringify(u.body));
  const sub = await api.post(`/users/${encodeURIComponent(userId)}/subscription`, {
    plan_id: planId,
    period_start: dates?.start.toISOString(),
    period_end: dates?.end.toISOString(),
  });
  assert.is(sub.status, 200, JSON.stringify(sub.body));
  return { userId, planId };
}

function usageEvent(userId: string, over: Record<string, unknown> = {}): Record<string, any> {
  return { id: randomUUID(), user_id: userId, timestamp: new Date().toISOString(), ...over };
}

t("a batch is stored and counted; totals and breakdowns equal what was sent", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const { userId } = await planAndUser(api, { max_spend_per_period: 1000 }, undefined, {
    start: new Date(Date.now() - 86_400_000),
    end: new Date(Date.now() + 86_400_000),
  });
  const models = ["gpt-4o", "claude-3.5-sonnet", "o1"];
  const events = Array.from({ length: 300 }, (_, i) =>
    usageEvent(userId, {
      model: models[i % 3],
      input_tokens: 100 + i,
      output_tokens: 2 * i,
      tool_calls: i % 4 === 0 ? ["search", "fetch"] : [],
      cost_tokens: 0.001 * i,
      cost_tools: i % 4 === 0 ? 0.04 : 0,
    }),
  );
  const expected = { cost: 0, tokens: 0, tools: 0, tokensBy: {} as Record<string, number>, costBy: {} as Record<string, number> };
  for (const e of events) {
    const tokens = (e.input_tokens as number) + (e.output_tokens as number);
    const cost = (e.cost_tokens as number) + (e.cost_tools as number);
    expected.cost += cost;
    expected.tokens += tokens;
    expected.tools += (e.tool_calls as string[]).length;
    expected.tokensBy[e.model as string] = (expected.tokensBy[e.model as string] ?? 0) + tokens;
    expected.costBy[e.model as string] = (expected.costBy[e.model as string] ?? 0) + cost;
  }
  const res = await api.post("/events/batch", events);
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body, { accepted: 300, duplicates: 0 });

  for (const period of ["current_period", "current_month"]) {
    const usage = await api.get(`/users/${userId}/usage?period=${period}`);
    assert.is(usage.status, 200);
    assert.is(usage.body.user_id, userId);
    assert.is(usage.body.period, period);
    close(usage.body.total_cost, expected.cost, period);
    assert.is(usage.body.total_tokens, expected.tokens, JSON.stringify(usage.body));
    assert.is(usage.body.tool_calls_count, expected.tools);
    assert.equal(usage.body.tokens_by_model, expected.tokensBy);
    for (const m of models) close(usage.body.cost_by_model[m], expected.costBy[m]!, m);
  }
  const session = await api.get(`/users/${userId}/session`);
  assert.is(session.status, 200);
  close(session.body.current_usage.period_cost, expected.cost);
  assert.is(session.body.current_usage.period_tokens_total, expected.tokens);
  assert.equal(session.body.current_usage.period_tokens_by_model, expected.tokensBy);
});

t("duplicates within a batch and across batches are counted, never rejected or added twice", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const userId = `dup-${randomUUID()}`;
  await api.post("/users", { external_user_id: userId });
  const a = usageEvent(userId, { cost_total: 1, model: "m", input_tokens: 10 });
  const b = usageEvent(userId, { cost_total: 2, model: "m", input_tokens: 20 });
  assert.equal((await api.post("/events/batch", [a, a, b])).body, { accepted: 2, duplicates: 1 });
  assert.equal((await api.post("/events/batch", [b, a, usageEvent(userId, { cost_total: 4 })])).body, { accepted: 1, duplicates: 2 });
  const usage = await api.get(`/users/${userId}/usage`);
  close(usage.body.total_cost, 7);
  assert.is(usage.body.total_tokens, 30);
  assert.equal((await api.post("/events/batch", [])).body, { accepted: 0, duplicates: 0 });
  // The same UUID in capitals, or as a URN, is the same id (another client's spelling of a resend).
  const spelled = [{ ...a, id: a.id.toUpperCase() }, { ...b, id: `urn:uuid:${b.id}` }];
  assert.equal((await api.post("/events/batch", spelled)).body, { accepted: 0, duplicates: 2 });
  const gate = { id: randomUUID(), user_id: userId, timestamp: new Date().toISOString(), status: "soft_gate", gate_reason: "total_spend", usage_pct: 0.9, current_value: 9, limit_value: 10, blocked: false };
  assert.equal((await api.post("/gate-events/batch", [gate])).body, { accepted: 1, duplicates: 0 });
  assert.equal((await api.post("/gate-events/batch", [{ ...gate, id: gate.id.toUpperCase() }])).body, { accepted: 0, duplicates: 1 });
  close((await api.get(`/users/${userId}/usage`)).body.total_cost, 7);
  // service_user_id comes back as sent (null when not), as docs/api.md lists it.
  const serviceUserId = randomUUID();
  assert.equal((await api.post("/gate-events/batch", [{ ...gate, id: randomUUID(), service_user_id: serviceUserId }])).body, { accepted: 1, duplicates: 0 });
  const listed = (await api.get(`/users/${userId}/gate-events`)).body.events as { id: string; service_user_id: string | null }[];
  assert.equal(listed.map((e) => e.service_user_id).sort(), [serviceUserId, null].sort());
});

t("a malformed batch is refused whole with 422 naming each bad event and field", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const good = usageEvent("someone");
  const res = await api.post("/events/batch", [
    good,
    usageEvent("someone", { timestamp: "yesterday" }),
    { id: randomUUID(), timestamp: new Date().toISOString() },
    usageEvent("someone", { input_tokens: -1, surprise: true }),
  ]);
  assert.is(res.status, 422);
  const paths = res.body.issues.map((i: { path: string }) => i.path);
  for (const p of ["/1/timestamp", "/2/user_id", "/3/input_tokens"]) assert.ok(paths.includes(p), `${p} in ${paths}`);
  assert.not.ok(paths.some((p: string) => p.startsWith("/0/")));
  // Nothing of the refused batch was stored: the good event is new when sent again.
  assert.equal((await api.post("/events/batch", [good])).body, { accepted: 1, duplicates: 0 });
  assert.is((await api.post("/events/batch", { events: [good] })).status, 422);
  assert.is((await api.post("/gate-events/batch", [{ id: randomUUID() }])).status, 422);
  assert.is((await api.post("/gate-events/batch", [{ ...gateEventJson("someone"), usage_pct: 1e303 }])).status, 422);
});

t("cost_total is cost_tokens + cost_tools: a total that contradicts its parts is refused (422), one sent alone or left out is counted", async ({ stack }) => {
  const { api } = await stack.newProduct();
  assert.is((await api.post("/users", { external_user_id: "adds" })).status, 201);
  const bad = await api.post("/events/batch", [usageEvent("adds", { cost_tokens: 1, cost_tools: 1, cost_total: 0.5 })]);
  assert.is(bad.status, 422, JSON.stringify(bad.body));
  assert.equal(bad.body.issues.map((i: { path: string }) => i.path), ["/0/cost_total"]);
  assert.match(bad.body.issues[0].message, /cost_tokens \+ cost_tools \(2\)/);
  const good = [
    usageEvent("adds", { cost_tokens: 0.1, cost_tools: 0.2, cost_total: 0.3 }),
    usageEvent("adds", { cost_total: 0.25 }),
    usageEvent("adds", { cost_tokens: 0.5, cost_tools: 0.02 }),
  ];
  assert.equal((await api.post("/events/batch", good)).body, { accepted: 3, duplicates: 0 });
  close((await api.get("/users/adds/usage")).body.total_cost, 1.07);
});

t("ids are counted in characters, as the users' own: a user of 255 emoji has its events and gate events stored", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const userId = "😀".repeat(255);
  assert.is((await api.post("/users", { external_user_id: userId })).status, 201);
  assert.equal((await api.post("/events/batch", [usageEvent(userId, { cost_total: 1 }), usageEvent("someone")])).body, { accepted: 2, duplicates: 0 });
  const gate = gateEventJson(userId);
  assert.equal((await api.post("/gate-events/batch", [gate])).body, { accepted: 1, duplicates: 0 });
  close((await api.get(`/users/${encodeURIComponent(userId)}/usage`)).body.total_cost, 1);
  const key = "🔑".repeat(255);
  const manual = await api.post("/events", { user_id: userId, cost: 0.5, idempotency_key: key });
  assert.is(manual.status, 201, JSON.stringify(manual.body));
});

t("numbers beyond what is stored exactly, and metadata nested too deep, are refused with 422, not 500", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const nest = (levels: number): Record<string, unknown> => (levels === 1 ? { leaf: 1 } : { a: nest(levels - 1) });
  const res = await api.post("/events/batch", [
    usageEvent("someone", { input_tokens: 1e300 }),
    usageEvent("someone", { total_tokens: Number.MAX_SAFE_INTEGER + 2 }),
    usageEvent("someone", { cost_total: 1e300 }),
    usageEvent("someone", { metadata: nest(METADATA_MAX_DEPTH + 1) }),
  ]);
  assert.is(res.status, 422, JSON.stringify(res.body));
  const paths = res.body.issues.map((i: { path: string }) => i.path);
  for (const p of ["/0/input_tokens", "/1/total_tokens", "/2/cost_total", "/3/metadata"]) assert.ok(paths.includes(p), `${p} in ${paths}`);
  assert.match(res.body.detail, new RegExp(`must not nest deeper than ${METADATA_MAX_DEPTH} levels`));
  const manual = await api.post("/events", { user_id: "someone", cost: 1, metadata: nest(METADATA_MAX_DEPTH + 1) });
  assert.is(manual.status, 422);
  const gate = gateEventJson("someone");
  assert.is((await api.post("/gate-events/batch", [{ ...gate, metadata: nest(METADATA_MAX_DEPTH + 1) }])).status, 422);
  // The deepest accepted metadata goes through every service on the way.
  assert.equal((await api.post("/events/batch", [usageEvent("someone", { metadata: nest(METADATA_MAX_DEPTH) })])).body, { accepted: 1, duplicates: 0 });
  assert.equal((await api.post("/gate-events/batch", [{ ...gate, metadata: nest(METADATA_MAX_DEPTH) }])).body, { accepted: 1, duplicates: 0 });
});

t("gate events name a team plan's dimensions with team: reasons; a team session cap or an unknown team reason is refused", async ({ stack }) => {
  const { api } = await stack.newProduct();
  await api.post("/users", { external_user_id: "member" });
  const gate = (gate_reason: string) => ({ id: randomUUID(), user_id: "member", timestamp: new Date().toISOString(), status: "hard_gate", gate_reason, usage_pct: 1, current_value: 1, limit_value: 1, blocked: true });
  const reasons = ["team:total_spend", "team:model_limit:gpt-4o", "team:limit:seat-monthly"];
  assert.equal((await api.post("/gate-events/batch", reasons.map(gate))).body, { accepted: 3, duplicates: 0 });
  const listed = await api.get(`/users/member/gate-events?gate_reason=${encodeURIComponent("team:limit:seat-monthly")}`);
  assert.equal(listed.body.events.map((e: { gate_reason: string }) => e.gate_reason), ["team:limit:seat-monthly"]);
  for (const bad of ["team:session_spend", "team:limit:Bad Name", "team:", "teams:total_spend"]) {
    const res = await api.post("/gate-events/batch", [gate(bad)]);
    assert.is(res.status, 422, `${bad}: ${JSON.stringify(res.body)}`);
  }
});

t("date-times without a zone are read as UTC, in bodies and in queries", async ({ stack }) => {
  const { api } = await stack.newProduct();
  await api.post("/users", { external_user_id: "tz" });
  // Two days ago: gate events are accepted from the last 90 days.
  const day = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
  const gate = gateEventJson("tz", { timestamp: `${day}T12:00:00` });
  assert.equal((await api.post("/gate-events/batch", [gate])).body, { accepted: 1, duplicates: 0 });
  assert.equal((await api.post("/events/batch", [usageEvent("tz", { timestamp: `${day} 12:00:00.5` })])).body, { accepted: 1, duplicates: 0 });
  const q = (since: string, until: string) => `/users/tz/gate-events?since=${encodeURIComponent(since)}&until=${encodeURIComponent(until)}`;
  const inside = await api.get(q(`${day}T12:00:00`, `${day} 12:00:01`));
  assert.is(inside.status, 200, JSON.stringify(inside.body));
  assert.equal(inside.body.events.map((e: { timestamp: string }) => e.timestamp), [`${day}T12:00:00.000Z`]);
  assert.equal((await api.get(q(`${day}T12:00:00.001`, `${day}T23:59:59`))).body.events, []);
  assert.equal((await api.get(q(`${day}T13:00:00+01:00`, `${day}T12:00:01Z`))).body.events.length, 1);
  assert.is((await api.get(q("2026-02-30T00:00:00", `${day}T23:59:59`))).status, 400);
});

t("metadata nested a million levels deep is a 422, not a 500", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const levels = 1_000_000;
  const event = JSON.stringify(usageEvent("deep")).slice(0, -1);
  const rawBody = `[${event},"metadata":${'{"a":'.repeat(levels)}1${"}".repeat(levels)}}]`;
  const res = await api.request("POST", "/events/batch", { rawBody });
  assert.is(res.status, 422, JSON.stringify(res.body).slice(0, 300));
  assert.match(res.body.detail, /must not nest deeper than/);
});

t("a body that is not UTF-8 is refused (two users would become one); a metadata key __proto__ is left out, the batch kept", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const event = (user: string) => `{"id":"${randomUUID()}","user_id":"${user}","timestamp":"${new Date().toISOString()}","cost_total":1.5}`;
  // "josé" and "josè" in Latin-1: the bytes 0xE9 and 0xE8, not UTF-8; each read as U+FFFD would be one user.
  const body = Buffer.from(`[${event("jos\u00e9")},${event("jos\u00e8")}]`, "latin1");
  const refused = await api.request("POST", "/events/batch", { rawBody: body });
  assert.is(refused.status, 400, JSON.stringify(refused.body));
  assert.match(refused.body.detail, /not valid UTF-8/);
  assert.equal((await api.get("/analytics/top-users?days=1")).body.users, []);
  // Valid JSON whose metadata holds __proto__ or constructor.prototype: stored and counted, those keys left out.
  assert.is((await api.post("/users", { external_user_id: "poison" })).status, 201);
  const poison = `[{"id":"${randomUUID()}","user_id":"poison","timestamp":"${new Date().toISOString()}","cost_total":1.25,"metadata":{"__proto__":{"x":1},"tool_args":{"constructor":{"prototype":{"x":1}}},"kept":true}}]`;
  const stored = await api.request("POST", "/events/batch", { rawBody: poison });
  assert.equal([stored.status, stored.body], [200, { accepted: 1, duplicates: 0 }]);
  assert.is((await api.get("/users/poison/usage")).body.total_cost, 1.25);
});

t("a batch beyond 10,000 events or 10 MiB is refused with 413", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const many = Array.from({ length: 10_001 }, () => usageEvent("big"));
  const count = await api.post("/events/batch", many);
  assert.is(count.status, 413, JSON.stringify(count.body).slice(0, 300));
  assert.match(count.body.detail, /10000/);
  const huge = [usageEvent("big", { metadata: { blob: "x".repeat(11 * 1024 * 1024) } })];
  const bytes = await api.post("/events/batch", huge);
  assert.is(bytes.status, 413);
  assert.is(typeof bytes.body.detail, "string");
});

t("manual events: explicit cost, plan pricing with normalized names, default rate, audit entry", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const { userId } = await planAndUser(api, {
    cost_rates: { "gpt-4o": { input: 2.5, output: 10 }, "gpt-4o-mini": { input: 0.15, output: 0.6 } },
    default_cost_rate: { input: 1, output: 2 },
    tool_costs: { search: 0.05 },
  });
  const explicit = await api.post("/events", { user_id: userId, cost: 1.25, model: "gpt-4o", input_tokens: 999999 });
  assert.is(explicit.status, 201, JSON.stringify(explicit.body));
  assert.match(explicit.body.id, /^evt_[0-9a-f-]{36}$/);
  assert.equal({ ...explicit.body, id: undefined, created_at: undefined }, {
    id: undefined, created_at: undefined, user_id: userId, cost: 1.25, model: "gpt-4o", source: "manual",
  });
  assert.ok(!Number.isNaN(Date.parse(explicit.body.created_at)));
  const priced = await api.post("/events", { user_id: userId, model: "gpt-4o-mini-2024-07-18", input_tokens: 2000, output_tokens: 1000 });
  assert.is(priced.body.model, "gpt-4o-mini");
  close(priced.body.cost, 2 * 0.15 + 1 * 0.6);
  const fallback = await api.post("/events", { user_id: userId, model: "llama-3", input_tokens: 1000, output_tokens: 1000, tool_calls: ["search"] });
  assert.is(fallback.body.model, "llama-3");
  close(fallback.body.cost, 1 + 2 + 0.05);
  const audit = await api.post("/events", { user_id: userId, description: "note" });
  assert.is(audit.status, 201);
  assert.is(audit.body.cost, 0);
  assert.is(audit.body.model, null);
  // Neither a cost nor tokens and a model: an audit entry at zero cost, its tool calls counted, not priced.
  const tools = await api.post("/events", { user_id: userId, tool_calls: ["search"] });
  assert.equal([tools.status, tools.body.cost], [201, 0]);
  // A model without tokens, or tokens without a model, is no more than that.
  const modelOnly = await api.post("/events", { user_id: userId, model: "gpt-4o", tool_calls: ["search"] });
  assert.equal([modelOnly.status, modelOnly.body.cost, modelOnly.body.model], [201, 0, "gpt-4o"]);
  const tokensOnly = await api.post("/events", { user_id: userId, input_tokens: 1000, tool_calls: ["search"] });
  assert.equal([tokensOnly.status, tokensOnly.body.cost], [201, 0]);

  const usage = await api.get(`/users/${userId}/usage`);
  close(usage.body.total_cost, 1.25 + 0.9 + 3.05);
  assert.is(usage.body.total_tokens, 999999 + 3000 + 2000 + 1000);
  assert.is(usage.body.tool_calls_count, 4);
  for (const [model, tokens] of Object.entries({ "gpt-4o": 999999, "gpt-4o-mini": 3000, "llama-3": 2000 })) assert.is(usage.body.tokens_by_model[model], tokens, model);
});

t("manual events: a repeated idempotency_key returns the first event and counts once", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const userId = `idem-${randomUUID()}`;
  await api.post("/users", { external_user_id: userId });
  const body = { user_id: userId, cost: 2, idempotency_key: "order-42" };
  const [a, b] = await Promise.all([api.post("/events", body), api.post("/events", body)]);
  const c = await api.post("/events", { ...body, cost: 5 });
  assert.equal([a.status, b.status, c.status], [201, 201, 201]);
  assert.is(b.body.id, a.body.id);
  assert.equal(c.body, a.body);
  const other = await api.post("/events", { ...body, idempotency_key: "order-43" });
  assert.is.not(other.body.id, a.body.id);
  const usage = await api.get(`/users/${userId}/usage`);
  close(usage.body.total_cost, 4);
  assert.is((await api.post("/events", { user_id: "nobody-here", cost: 1 })).status, 404);
  assert.is((await api.post("/events", { user_id: userId, cost: -1 })).status, 422);
});

t("events of an unregistered user are stored and counted, and show once the user registers", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const userId = `late-${randomUUID()}`;
  const res = await api.post("/events/batch", [usageEvent(userId, { cost_total: 0.5, model: "m", input_tokens: 7 })]);
  assert.equal(res.body, { accepted: 1, duplicates: 0 });
  assert.is((await api.get(`/users/${userId}/usage`)).status, 404);
  await api.post("/users", { external_user_id: userId });
  const usage = await api.get(`/users/${userId}/usage`);
  close(usage.body.total_cost, 0.5);
  assert.equal(usage.body.tokens_by_model, { m: 7 });
});

t("metadata is free-form: keys with '.' or '$' are accepted, counted and stored exactly as sent", async ({ stack }) => {
  const { api, productId } = await stack.newProduct();
  const userId = `md-${randomUUID()}`;
  await api.post("/users", { external_user_id: userId });
  const metadata = { "a.b": 1, $date: "2020-01-01", nested: { $oid: "x", "k.v": [1, { $set: 2 }] }, $numberLong: "7" };
  const batch = usageEvent(userId, { cost_total: 0.25, model: "m", metadata });
  assert.equal((await api.post("/events/batch", [batch])).body, { accepted: 1, duplicates: 0 });
  const gate = gateEventJson(userId, { metadata });
  assert.equal((await api.post("/gate-events/batch", [gate])).body, { accepted: 1, duplicates: 0 });
  const manual = await api.post("/events", { user_id: userId, cost: 0.5, metadata });
  assert.is(manual.status, 201, JSON.stringify(manual.body));
  close((await api.get(`/users/${userId}/usage`)).body.total_cost, 0.75);
  assert.is((await api.get(`/users/${userId}/gate-events`)).body.events.length, 1);

  const mongo = await connectMongo(await testMongoUrl());
  try {
    const db = mongo.db(`${stack.dbPrefix}_ingestion`);
    const usage = await db.collection("usage_events").find({ product_id: productId }).toArray();
    assert.is(usage.length, 2);
    for (const d of usage) assert.equal(decodeMetadata(d.metadata), metadata);
    const gates = await db.collection("gate_events").find({ product_id: productId }).toArray();
    assert.equal(gates.map((d) => decodeMetadata(d.metadata)), [metadata]);
  } finally {
    await mongo.close();
  }
});

t("model names with white space at their ends are counted and read back as sent (the embedded database refused them: 500); such grant ids are 422", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const now = Date.now();
  const { userId } = await planAndUser(api, { max_spend_per_period: 0, credits_enabled: true }, undefined, { start: new Date(now - 86_400_000), end: new Date(now + 29 * 86_400_000) });
  const [padded, formFeed] = [" gpt-4o ", "\f"];
  const batch = await api.post("/events/batch", [usageEvent(userId, { model: padded, input_tokens: 10, output_tokens: 5, cost_total: 0.5 }), usageEvent(userId, { model: formFeed, input_tokens: 1, output_tokens: 1, cost_total: 0.25 })]);
  assert.is(batch.status, 200, JSON.stringify(batch.body));
  const manual = await api.post("/events", { user_id: userId, model: formFeed, input_tokens: 2, output_tokens: 2, cost: 0.25 });
  assert.is(manual.status, 201, JSON.stringify(manual.body));
  const usage = (await api.get(`/users/${userId}/usage`)).body;
  assert.equal(usage.tokens_by_model, { [padded]: 15, [formFeed]: 6 });
  close(usage.cost_by_model[formFeed], 0.5);
  // A grant id with white space at an end is a pasted id's stray space: refused, naming the field.
  for (const id of ["pay_1\u00a0", " pay_1", "pay_1\u2028 "]) {
    const refused = await api.post(`/users/${userId}/credits`, { id, amount: 2 });
    assert.is(refused.status, 422, JSON.stringify(refused.body));
    assert.match(JSON.stringify(refused.body), /\bid\b/);
  }
  assert.is((await api.post(`/users/${userId}/credits`, { id: "pay 1", amount: 2 })).status, 201, "white space inside an id is fine");
  const voided = await api.post(`/users/${userId}/credits/${encodeURIComponent(" pay 1")}/void`, {});
  assert.is(voided.status, 404, `a grant id as stored may name a grant in a path: none here (${JSON.stringify(voided.body)})`);
  const credits = (await api.get(`/users/${userId}/credits`)).body;
  close(credits.balance, 1, "$2 granted, $1 drawn");
});

t("products are isolated: same event ids and user ids are separate", async ({ stack }) => {
  const a = (await stack.newProduct("A")).api;
  const b = (await stack.newProduct("B")).api;
  const userId = `shared-${randomUUID()}`;
  await a.post("/users", { external_user_id: userId });
  const e = usageEvent(userId, { cost_total: 3 });
  assert.equal((await a.post("/events/batch", [e])).body, { accepted: 1, duplicates: 0 });
  assert.equal((await b.post("/events/batch", [e])).body, { accepted: 1, duplicates: 0 });
  assert.is((await b.get(`/users/${userId}/usage`)).status, 404);
  assert.is((await b.get(`/users/${userId}/session`)).status, 404);
  assert.is((await b.get(`/users/${userId}/gate-events`)).status, 404);
  assert.is((await b.post("/events", { user_id: userId, cost: 1 })).status, 404);
  await b.post("/users", { external_user_id: userId });
  close((await b.get(`/users/${userId}/usage`)).body.total_cost, 3);
  close((await a.get(`/users/${userId}/usage`)).body.total_cost, 3);
  assert.is((await stack.api.post("/events/batch", [e])).status, 401);
});

t("concurrent batches for one user from several connections give exact totals", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const userId = `conc-${randomUUID()}`;
  await api.post("/users", { external_user_id: userId });
  const batches = Array.from({ length: 8 }, (_, b) =>
    Array.from({ length: 50 }, (_, i) => usageEvent(userId, { cost_total: 0.01 * (i + 1), input_tokens: b + i, model: `m${i % 2}` })),
  );
  // Each batch twice, all at once: overlap between concurrent requests is absorbed too. A batch
  // the product's admission line turns away as busy (429: it would wait past its bound on a slow
  // machine) is sent again after Retry-After, as the client libraries do; nothing of it was stored.
  const send = async (batch: unknown[]) => {
    for (;;) {
      const res = await api.post("/events/batch", batch);
      if (res.status !== 429) return res;
      await new Promise((r) => setTimeout(r, Number(res.headers.get("retry-after") ?? 1) * 1000));
    }
  };
  const results = await Promise.all([...batches, ...batches].map(send));
  assert.ok(results.every((r) => r.status === 200), JSON.stringify(results.filter((r) => r.status !== 200).map((r) => [r.status, r.body])));
  assert.is(results.reduce((n, r) => n + r.body.accepted, 0), 400);
  assert.is(results.reduce((n, r) => n + r.body.duplicates, 0), 400);
  const expectedCost = batches.flat().reduce((s, e) => s + e.cost_total, 0);
  const expectedTokens = batches.flat().reduce((s, e) => s + e.input_tokens, 0);
  const usage = await api.get(`/users/${userId}/usage`);
  close(usage.body.total_cost, expectedCost);
  assert.is(usage.body.total_tokens, expectedTokens);
  const month = await api.get(`/users/${userId}/usage?period=current_month`);
  assert.is(month.body.total_tokens, expectedTokens);
});

t.run();
