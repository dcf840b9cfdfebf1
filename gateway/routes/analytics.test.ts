import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { toDollars, toNano } from "@meter/rules";
import type { Api } from "../../test/support/http.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";

const DAY = 86_400_000;
/** Analytics' "now" is pinned one second before the end of the real current UTC day, so that
 * manual events (stamped with the real time) fall on "today" and the window edges are exact. */
const TODAY = Math.floor(Date.now() / DAY) * DAY;
const NOW = new Date(TODAY + DAY - 1_000);
/** The latest event time ingestion accepts when events are sent (it refuses the future). */
const LATEST = Math.min(Date.now(), TODAY + DAY - 1_500);
const iso = (ms: number) => new Date(ms).toISOString();
const dayOf = (ms: number) => iso(ms).slice(0, 10);

const t = suite<{ stack: TestStack }>("analytics over HTTP");

t.before(async (ctx) => {
  ctx.stack = await startTestStack({
    services: { ingestion: { relayIntervalMs: 50 }, analytics: { rollIntervalMs: 100, now: () => NOW } },
  });
});
t.after(async (ctx) => {
  await ctx.stack.close();
});

const close = (a: number, b: number, msg = "") => assert.ok(Math.abs(a - b) < 1e-6, `${msg} ${a} != ${b}`);

/** Polls until `done` holds for the response of GET `path` (the feed is asynchronous). */
async function until(api: Api, path: string, done: (body: any) => boolean, ms = 30_000): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const res = await api.get(path);
    assert.is(res.status, 200, JSON.stringify(res.body));
    if (done(res.body) || Date.now() > deadline) return res.body;
    await new Promise((r) => setTimeout(r, 150));
  }
}

interface Sent {
  user: string;
  at: number;
  cost: number;
  tokens: number;
  model: string | null;
  source: "auto" | "manual";
}

function rng(seed: number) {
  return () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
}

/** Ingests usage through POST /events/batch and POST /events; returns what was sent. */
async function ingest(api: Api, seed: number): Promise<Sent[]> {
  const rand = rng(seed);
  const models = ["gpt-4o", "claude-3.5-sonnet", null];
  const sent: Sent[] = [];
  const batch: Record<string, unknown>[] = [];
  // Exactly on the edges of the 3-day window and of the previous 3 days.
  const edges = [TODAY - 2 * DAY, TODAY - 2 * DAY - 1, TODAY - 5 * DAY, TODAY - 5 * DAY - 1, LATEST];
  for (let i = 0; i < 150; i++) {
    const at = i < edges.length ? edges[i]! : LATEST - Math.floor(rand() * 9 * DAY);
    const e = {
      user: `user-${Math.floor(rand() * 12)}`,
      at,
      cost: Math.round(rand() * 100_000) / 10_000,
      tokens: 0,
      model: models[i % 3]!,
      source: "auto" as const,
    };
    const input = Math.floor(rand() * 500);
    const output = Math.floor(rand() * 500);
    e.tokens = input + output;
    sent.push(e);
    batch.push({ id: randomUUID(), user_id: e.user, timestamp: iso(at), model: e.model, input_tokens: input, output_tokens: output, cost_total: e.cost });
  }
  const res = await api.post("/events/batch", batch);
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.is(res.body.accepted, batch.length);
  // A replay of the whole batch is only duplicates.
  const again = await api.post("/events/batch", batch);
  assert.is(again.body.duplicates, batch.length);
  // Manual events need registered users.
  for (let i = 0; i < 4; i++) assert.is((await api.post("/users", { external_user_id: `user-${i}` })).status, 201);
  for (let i = 0; i < 6; i++) {
    const user = `user-${i % 4}`;
    const cost = 1 + i;
    const m = await api.post("/events", { user_id: user, cost, model: i % 2 ? "gpt-4o" : null });
    assert.is(m.status, 201, JSON.stringify(m.body));
    sent.push({ user, at: Date.parse(m.body.created_at), cost, tokens: 0, model: i % 2 ? "gpt-4o" : null, source: "manual" });
  }
  return sent;
}

function totals(events: Sent[], from: number, to: number) {
  const inside = events.filter((e) => e.at >= from && e.at < to);
  return {
    total_cost: inside.reduce((a, e) => a + e.cost, 0),
    total_tokens: inside.reduce((a, e) => a + e.tokens, 0),
    total_events: inside.length,
    active_users: new Set(inside.map((e) => e.user)).size,
  };
}

function sameTotals(actual: any, expected: ReturnType<typeof totals>, what: string) {
  close(actual.total_cost, expected.total_cost, `${what} cost`);
  assert.is(actual.total_tokens, expected.total_tokens, `${what} tokens`);
  assert.is(actual.total_events, expected.total_events, `${what} events`);
  assert.is(actual.active_users, expected.active_users, `${what} active users`);
}

t("figures equal what was ingested: summary, previous period, timeseries, breakdown, top users, source filter", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const sent = await ingest(api, 42);
  const all = totals(sent, 0, Infinity);
  const ready = await until(api, "/analytics/summary?days=30", (b) => b.total_events === all.total_events);

  sameTotals(ready, all, "30 days");
  const s3 = (await api.get("/analytics/summary?days=3")).body;
  assert.is(s3.period_start, iso(TODAY - 2 * DAY));
  assert.is(s3.period_end, iso(TODAY + DAY));
  sameTotals(s3, totals(sent, TODAY - 2 * DAY, TODAY + DAY), "current 3 days");
  sameTotals(s3.previous_period, totals(sent, TODAY - 5 * DAY, TODAY - 2 * DAY), "previous 3 days");

  const ts = (await api.get("/analytics/timeseries?days=7")).body.data;
  assert.is(ts.length, 7);
  ts.forEach((row: any, i: number) => {
    const from = TODAY - (6 - i) * DAY;
    assert.is(row.date, dayOf(from));
    const x = totals(sent, from, from + DAY);
    close(row.cost, x.total_cost, row.date);
    assert.is(row.tokens, x.total_tokens);
    assert.is(row.events, x.total_events);
  });

  const models = (await api.get("/analytics/breakdown?days=30")).body.models;
  for (const m of models) {
    const mine = sent.filter((e) => (e.model ?? "unknown") === m.model);
    close(m.cost, mine.reduce((a, e) => a + e.cost, 0), m.model);
    assert.is(m.tokens, mine.reduce((a, e) => a + e.tokens, 0));
  }
  assert.equal(models.map((m: any) => m.model).sort(), ["claude-3.5-sonnet", "gpt-4o", "unknown"]);
  assert.ok(Math.abs(models.reduce((a: number, m: any) => a + m.pct, 0) - 100) <= 0.05, "pct sums to 100");
  assert.equal(models.map((m: any) => m.cost), [...models.map((m: any) => m.cost)].sort((a, b) => b - a));

  const byUser = new Map<string, number>();
  for (const e of sent) byUser.set(e.user, (byUser.get(e.user) ?? 0) + e.cost);
  const order = [...byUser].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([u]) => u);
  const top = (await api.get("/analytics/top-users?days=30&limit=3")).body.users;
  assert.equal(top.map((u: any) => u.user_id), order.slice(0, 3));
  close(top[0].cost, byUser.get(order[0]!)!, "top cost");
  assert.is((await api.get("/analytics/top-users?days=30")).body.users.length, Math.min(10, byUser.size));

  const manual = sent.filter((e) => e.source === "manual");
  sameTotals((await api.get("/analytics/summary?days=30&source=manual")).body, totals(manual, 0, Infinity), "manual");
  const auto = sent.filter((e) => e.source === "auto");
  sameTotals((await api.get("/analytics/summary?days=30&source=auto")).body, totals(auto, 0, Infinity), "auto");
  const mts = (await api.get("/analytics/timeseries?days=1&source=manual")).body.data;
  assert.equal(mts.map((r: any) => [r.date, r.events]), [[dayOf(TODAY), manual.length]]);
  const mb = (await api.get("/analytics/breakdown?days=30&source=manual")).body.models;
  assert.equal(mb.map((m: any) => [m.model, m.cost]), [["gpt-4o", 2 + 4 + 6], ["unknown", 1 + 3 + 5]]);
  const mtop = (await api.get("/analytics/top-users?days=30&source=manual&limit=1")).body.users;
  assert.equal(mtop.map((u: any) => [u.user_id, u.cost, u.events]), [["user-1", 2 + 6, 2]]);
});

t("money is exact at the nano-dollar: analytics shows the very sums of GET /users/{id}/usage", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const user = "exact";
  assert.is((await api.post("/users", { external_user_id: user })).status, 201);
  // Costs far below a micro-dollar and costs using every bit of a double: each is taken to
  // the nano-dollar once, and every answer is the exact sum of those.
  const costs = [2 ** -30, 3 * 2 ** -27, 0.5 + 2 ** -40, 1.25, 7 * 2 ** -33, 2 ** -20 + 2 ** -45];
  const at = new Date(Math.min(Date.now(), NOW.getTime())).toISOString();
  const batch = costs.map((cost, i) => ({ id: randomUUID(), user_id: user, timestamp: at, model: i % 2 ? "gpt-4o" : "o1", cost_total: cost }));
  assert.is((await api.post("/events/batch", batch)).status, 200);
  assert.is((await api.post("/events", { user_id: user, cost: 2 ** -31, model: "o1" })).status, 201);
  const expected = toDollars([...costs, 2 ** -31].reduce((a, c) => a + toNano(c), 0));
  assert.is.not(expected, Math.round(expected * 1e6) / 1e6, "the sum is not a whole number of micro-dollars");

  const usage = (await api.get(`/users/${user}/usage?period=current_month`)).body;
  assert.is(usage.total_cost, expected);
  const summary = await until(api, "/analytics/summary?days=1", (b) => b.total_events === costs.length + 1);
  assert.is(summary.total_cost, usage.total_cost, "summary");
  const [top] = (await api.get("/analytics/top-users?days=1")).body.users;
  assert.is(top.cost, usage.total_cost, "top users");
  const [today] = (await api.get("/analytics/timeseries?days=1")).body.data;
  assert.is(today.cost, usage.total_cost, "timeseries");
  const models = (await api.get("/analytics/breakdown?days=1")).body.models;
  assert.equal(Object.fromEntries(models.map((m: any) => [m.model, m.cost])), usage.cost_by_model, "breakdown");
});

t("gate timeseries count soft and hard gates per day", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const gate = (at: number, status: string) => ({
    id: randomUUID(),
    user_id: "g-user",
    timestamp: iso(at),
    status,
    gate_reason: "total_spend",
    usage_pct: status === "hard_gate" ? 1 : 0.8,
    current_value: 8,
    limit_value: 10,
    blocked: status === "hard_gate",
  });
  const res = await api.post("/gate-events/batch", [
    gate(TODAY + 5_000, "soft_gate"),
    gate(TODAY + 6_000, "hard_gate"),
    gate(TODAY - 1, "soft_gate"),
    gate(TODAY - 1_000, "soft_gate"),
  ]);
  assert.is(res.status, 200, JSON.stringify(res.body));
  const body = await until(api, "/analytics/gate-timeseries?days=2", (b) => b.data.reduce((a: number, d: any) => a + d.soft_gates + d.hard_gates, 0) === 4);
  assert.equal(body.data, [
    { date: dayOf(TODAY - DAY), soft_gates: 2, hard_gates: 0 },
    { date: dayOf(TODAY), soft_gates: 1, hard_gates: 1 },
  ]);
});

t("another product sees none of it", async ({ stack }) => {
  const a = await stack.newProduct();
  const sent = await ingest(a.api, 7);
  await until(a.api, "/analytics/summary", (b) => b.total_events === sent.length);
  const { api } = await stack.newProduct();
  const s = (await api.get("/analytics/summary")).body;
  assert.equal([s.total_cost, s.total_tokens, s.total_events, s.active_users], [0, 0, 0, 0]);
  assert.equal((await api.get("/analytics/top-users")).body.users, []);
  assert.equal((await api.get("/analytics/breakdown")).body.models, []);
  const ts = (await api.get("/analytics/timeseries")).body.data;
  assert.is(ts.length, 30);
  assert.ok(ts.every((r: any) => r.events === 0 && r.cost === 0));
});

t("plan-subscribers counts the users and the teams on each plan", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const plans = await api.post("/config/plans", { plans: [{ name: "free" }, { name: "pro" }] });
  assert.is(plans.status, 201, JSON.stringify(plans.body));
  const id = Object.fromEntries(plans.body.plans.map((p: any) => [p.name, p.id]));
  const subscribe = async (user: string, plan: string) => {
    assert.is((await api.post("/users", { external_user_id: user })).status, 201);
    const r = await api.post(`/users/${user}/subscription`, { plan_id: id[plan] });
    assert.is(r.status, 200, JSON.stringify(r.body));
  };
  await subscribe("a", "pro");
  await subscribe("b", "pro");
  await subscribe("c", "free");
  const body = (await api.get("/analytics/plan-subscribers")).body;
  const counts = Object.fromEntries(body.plans.map((p: any) => [p.plan_name, p.subscriber_count]));
  assert.is(counts.pro, 2);
  assert.is(counts.free, 1);
  const other = await stack.newProduct();
  const none = (await other.api.get("/analytics/plan-subscribers")).body.plans;
  assert.ok(none.every((p: any) => p.subscriber_count === 0));
  // With a team: its members only, each under its own plan; days taken as on every analytics route.
  assert.is((await api.post("/teams", { external_team_id: "acme", name: "Acme" })).status, 201);
  for (const user of ["a", "c"]) assert.is((await api.put(`/users/${user}/team`, { team_id: "acme" })).status, 200);
  assert.is((await api.post("/teams/acme/subscription", { plan_id: id.pro })).status, 200);
  const team = await api.get("/analytics/plan-subscribers?team_id=acme&days=7");
  assert.is(team.status, 200, JSON.stringify(team.body));
  assert.equal(team.body.plans, [
    { plan_name: "free", subscriber_count: 1, team_subscriber_count: 0 },
    { plan_name: "pro", subscriber_count: 1, team_subscriber_count: 1 },
  ]);
  const all = (await api.get("/analytics/plan-subscribers")).body.plans;
  assert.equal(all, [
    { plan_name: "free", subscriber_count: 1, team_subscriber_count: 0 },
    { plan_name: "pro", subscriber_count: 2, team_subscriber_count: 1 },
  ]);
  assert.is((await api.get("/analytics/plan-subscribers?team_id=nope")).status, 404);
  assert.is((await api.get("/analytics/plan-subscribers?days=0")).status, 400);
});

t("query parameters are validated (400) and a key is required (401)", async ({ stack }) => {
  const { api } = await stack.newProduct();
  for (const path of [
    "/analytics/summary?days=0",
    "/analytics/summary?days=366",
    "/analytics/timeseries?days=abc",
    "/analytics/gate-timeseries?days=1.5",
    "/analytics/breakdown?source=batch",
    "/analytics/top-users?limit=0",
    "/analytics/top-users?limit=101",
  ]) {
    const res = await api.get(path);
    assert.is(res.status, 400, path);
    assert.type(res.body.detail, "string");
  }
  for (const path of ["/analytics/summary?days=365", "/analytics/top-users?limit=100", "/analytics/summary?days=1&source=manual"]) {
    assert.is((await api.get(path)).status, 200, path);
  }
  const anonymous = stack.api;
  for (const p of ["summary", "timeseries", "gate-timeseries", "breakdown", "top-users", "plan-subscribers"]) {
    assert.is((await anonymous.get(`/analytics/${p}`)).status, 401, p);
  }
});

t.run();
