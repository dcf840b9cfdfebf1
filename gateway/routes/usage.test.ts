import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Api } from "../../test/support/http.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";

const t = suite<{ stack: TestStack }>("usage, session and gate events over HTTP");

t.before(async (ctx) => {
  ctx.stack = await startTestStack({ services: { ingestion: { relayIntervalMs: 50 } } });
});
t.after(async (ctx) => {
  await ctx.stack.close();
});

const DAY = 86_400_000;
const close = (a: number, b: number, msg?: string) => assert.ok(Math.abs(a - b) < 1e-6, `${msg ?? ""} ${a} != ${b}`);

async function createPlan(api: Api, plan: Record<string, unknown>): Promise<string> {
  const res = await api.post("/config/plans", { plans: [{ name: `p-${randomUUID()}`, ...plan }] });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.plans[0].id;
}

async function subscribe(api: Api, userId: string, planId: string, start?: Date, end?: Date) {
  const res = await api.post(`/users/${userId}/subscription`, {
    plan_id: planId,
    period_start: start?.toISOString(),
    period_end: end?.toISOString(),
  });
  assert.is(res.status, 200, JSON.stringify(res.body));
}

async function spend(api: Api, userId: string, costs: number[], at = () => new Date()) {
  const res = await api.post(
    "/events/batch",
    costs.map((c) => ({ id: randomUUID(), user_id: userId, timestamp: at().toISOString(), model: "gpt-4o", input_tokens: 10, cost_total: c })),
  );
  assert.is(res.status, 200, JSON.stringify(res.body));
}

t("a plan change with the same dates carries spend over; fresh dates start the new period at zero", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const userId = `carry-${randomUUID()}`;
  await api.post("/users", { external_user_id: userId });
  const start = new Date(Date.now() - 10 * DAY);
  const end = new Date(Date.now() + 20 * DAY);
  const basic = await createPlan(api, { max_spend_per_period: 100 });
  const pro = await createPlan(api, { max_spend_per_period: 500 });
  await subscribe(api, userId, basic, start, end);
  await spend(api, userId, [1, 2, 3]);

  await subscribe(api, userId, pro, start, end);
  await spend(api, userId, [4]);
  let session = await api.get(`/users/${userId}/session`);
  assert.is(session.status, 200);
  close(session.body.current_usage.period_cost, 10);
  assert.is(session.body.current_usage.period_tokens_total, 40);
  assert.equal(session.body.billing_period, { start: start.toISOString(), end: end.toISOString() });
  assert.is(session.body.plan_config.max_spend_per_period, 500);
  close((await api.get(`/users/${userId}/usage?period=current_period`)).body.total_cost, 10);

  const freshStart = new Date();
  const freshEnd = new Date(freshStart.getTime() + 30 * DAY);
  await subscribe(api, userId, basic, freshStart, freshEnd);
  session = await api.get(`/users/${userId}/session`);
  assert.is(session.body.current_usage.period_cost, 0);
  assert.equal(session.body.current_usage.period_tokens_by_model, {});
  assert.equal(session.body.billing_period, { start: freshStart.toISOString(), end: freshEnd.toISOString() });
  await spend(api, userId, [0.5]);
  const usage = await api.get(`/users/${userId}/usage`);
  close(usage.body.total_cost, 0.5);
  // The calendar month still holds everything.
  close((await api.get(`/users/${userId}/usage?period=current_month`)).body.total_cost, 10.5, "month");
});

t("usage periods: YYYY-MM reads that month only; anything else is 400", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const userId = `months-${randomUUID()}`;
  await api.post("/users", { external_user_id: userId });
  await spend(api, userId, [1.5, 2.5], () => new Date("2025-03-15T12:00:00Z"));
  await spend(api, userId, [7], () => new Date("2025-04-01T00:00:00Z"));
  const march = await api.get(`/users/${userId}/usage?period=2025-03`);
  assert.is(march.status, 200);
  assert.equal(march.body, {
    user_id: userId, period: "2025-03", total_cost: 4, total_tokens: 20,
    tokens_by_model: { "gpt-4o": 20 }, cost_by_model: { "gpt-4o": 4 }, tool_calls_count: 0,
  });
  close((await api.get(`/users/${userId}/usage?period=2025-04`)).body.total_cost, 7);
  assert.is((await api.get(`/users/${userId}/usage?period=current_month`)).body.total_cost, 0);
  const dflt = await api.get(`/users/${userId}/usage`);
  assert.is(dflt.body.period, "current_period");
  for (const bad of ["2025-13", "2025-00", "2025-1", "last_month", "2025-03-01"]) {
    const res = await api.get(`/users/${userId}/usage?period=${bad}`);
    assert.is(res.status, 400, bad);
    assert.is(typeof res.body.detail, "string");
  }
  assert.is((await api.get(`/users/${userId}/usage?breakdown=user`)).status, 400);
  assert.is((await api.get(`/users/nobody-${randomUUID()}/usage`)).status, 404);
});

t("session: permissive defaults without a plan, the plan's config with one, 404 for unknown users", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const userId = `sess-${randomUUID()}`;
  const created = await api.post("/users", { external_user_id: userId });
  const bare = await api.get(`/users/${userId}/session`);
  assert.is(bare.status, 200);
  const now = new Date();
  assert.equal(bare.body, {
    user_id: userId,
    service_user_id: created.body.id,
    plan: "none",
    plan_id: null,
    sdk_enabled: false,
    // Unlimited caps and the absent default rate are omitted (an omitted cap means unlimited).
    plan_config: {
      soft_gate_at: 0.8, hard_gate_at: 1,
      model_limits: {}, cost_rates: {},
      session_timeout_minutes: 30, tool_costs: {}, default_tool_cost: 0,
      pre_call_estimate: false, pre_call_buffer_tokens: 4096,
      limits: [], time_zone: "UTC",
      credits_enabled: false,
    },
    current_usage: { period_cost: 0, period_tokens_total: 0, period_tokens_by_model: {}, period_cost_by_model: {} },
    billing_period: {
      start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
      end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
    },
    // A user without a plan is counted against nothing.
    limits: [],
    credits: null,
    team: null,
  });
  const planId = await createPlan(api, {
    max_spend_per_period: 20,
    max_spend_per_session: 2,
    soft_gate_at: 0.7,
    model_limits: { "gpt-4o": { max_tokens_per_period: 5000 } },
    cost_rates: { "gpt-4o": { input: 2.5, output: 10 } },
    session_timeout_minutes: 12.5,
    default_cost_rate: { input: 1, output: 3 },
    tool_costs: { search: 0.05 },
    default_tool_cost: 0.01,
    pre_call_estimate: true,
    pre_call_buffer_tokens: 512,
  });
  await subscribe(api, userId, planId, new Date(Date.now() - DAY), new Date(Date.now() + DAY));
  await spend(api, userId, [0.25]);
  const s = await api.get(`/users/${userId}/session`);
  assert.is(s.body.sdk_enabled, true);
  assert.is(s.body.plan_id, planId);
  assert.is(s.body.plan_config.max_spend_per_period, 20);
  assert.is(s.body.plan_config.max_spend_per_session, 2);
  assert.is(s.body.plan_config.soft_gate_at, 0.7);
  assert.is(s.body.plan_config.hard_gate_at, 1);
  assert.equal(s.body.plan_config.model_limits, { "gpt-4o": { max_tokens_per_period: 5000 } });
  assert.equal(s.body.plan_config.cost_rates, { "gpt-4o": { input: 2.5, output: 10 } });
  assert.is(s.body.plan_config.session_timeout_minutes, 12.5);
  assert.equal(s.body.plan_config.default_cost_rate, { input: 1, output: 3 });
  assert.equal(s.body.plan_config.tool_costs, { search: 0.05 });
  assert.is(s.body.plan_config.default_tool_cost, 0.01);
  assert.is(s.body.plan_config.pre_call_estimate, true);
  assert.is(s.body.plan_config.pre_call_buffer_tokens, 512);
  assert.equal(s.body.current_usage, {
    period_cost: 0.25, period_tokens_total: 10, period_tokens_by_model: { "gpt-4o": 10 }, period_cost_by_model: { "gpt-4o": 0.25 },
  });
  assert.is((await api.get(`/users/nobody-${randomUUID()}/session`)).status, 404);
});

/** A whole minute of yesterday: gate events are accepted from the last 90 days. */
const GATE_BASE = Math.floor((Date.now() - DAY) / 60_000) * 60_000;

function gateEvent(userId: string, i: number, over: Record<string, unknown> = {}) {
  return {
    id: randomUUID(),
    user_id: userId,
    // Pairs share a timestamp so that the tie-break on id is exercised.
    timestamp: new Date(GATE_BASE + Math.floor(i / 2) * 1000).toISOString(),
    status: i % 3 === 0 ? "hard_gate" : "soft_gate",
    gate_reason: i % 2 === 0 ? "total_spend" : "model_limit:gpt-4o",
    usage_pct: 0.8 + i / 100,
    current_value: 8 + i,
    limit_value: 10,
    blocked: i % 3 === 0 && i % 2 === 0,
    ...over,
  };
}

t("gate events: idempotent batches, newest first, every filter", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const userId = `gates-${randomUUID()}`;
  await api.post("/users", { external_user_id: userId });
  const events = Array.from({ length: 30 }, (_, i) => gateEvent(userId, i));
  assert.equal((await api.post("/gate-events/batch", [...events, events[0]])).body, { accepted: 30, duplicates: 1 });
  assert.equal((await api.post("/gate-events/batch", events.slice(0, 5))).body, { accepted: 0, duplicates: 5 });

  const all = await api.get(`/users/${userId}/gate-events`);
  assert.is(all.status, 200);
  assert.is(all.body.events.length, 30);
  assert.is(all.body.next_cursor, null);
  const times = all.body.events.map((e: { timestamp: string }) => e.timestamp);
  assert.equal(times, [...times].sort().reverse());
  const first = all.body.events.find((e: { id: string }) => e.id === events[3]!.id);
  assert.equal(Object.keys(first).sort(), [
    "blocked", "current_value", "gate_reason", "id", "limit_value", "message", "metadata", "model", "service_user_id", "session_id", "status", "timestamp", "usage_pct", "user_id",
  ]);
  assert.is(first.session_id, null);
  assert.is(first.message, null);

  const ids = (q: string) => api.get(`/users/${userId}/gate-events?${q}`).then((r) => {
    assert.is(r.status, 200, q);
    return new Set<string>(r.body.events.map((e: { id: string }) => e.id));
  });
  const expect = (pred: (e: ReturnType<typeof gateEvent>) => boolean) => new Set(events.filter(pred).map((e) => e.id));
  assert.equal(await ids("status=hard_gate"), expect((e) => e.status === "hard_gate"));
  assert.equal(await ids("gate_reason=model_limit:gpt-4o"), expect((e) => e.gate_reason === "model_limit:gpt-4o"));
  assert.equal(await ids("blocked_only=true"), expect((e) => e.blocked));
  const since = events[10]!.timestamp;
  const until = events[20]!.timestamp;
  assert.equal(await ids(`since=${since}&until=${until}`), expect((e) => e.timestamp >= since && e.timestamp < until));
  assert.equal(
    await ids(`status=soft_gate&gate_reason=total_spend&since=${since}`),
    expect((e) => e.status === "soft_gate" && e.gate_reason === "total_spend" && e.timestamp >= since),
  );
  for (const bad of ["limit=0", "limit=501", "status=ok", "since=yesterday", "cursor=garbage", "blocked_only=maybe"]) {
    assert.is((await api.get(`/users/${userId}/gate-events?${bad}`)).status, 400, bad);
  }
  assert.is((await api.get(`/users/nobody-${randomUUID()}/gate-events`)).status, 404);
});

t("gate events: the cursor pages through every event exactly once while new ones arrive", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const userId = `pages-${randomUUID()}`;
  await api.post("/users", { external_user_id: userId });
  const events = Array.from({ length: 23 }, (_, i) => gateEvent(userId, i));
  await api.post("/gate-events/batch", events);
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res: { status: number; body: any } = await api.get(
      `/users/${userId}/gate-events?limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
    );
    assert.is(res.status, 200);
    assert.ok(res.body.events.length <= 5);
    seen.push(...res.body.events.map((e: { id: string }) => e.id));
    cursor = res.body.next_cursor;
    pages++;
    // Newer events arrive while paging; they sort before the cursor and do not disturb it.
    await api.post("/gate-events/batch", [gateEvent(userId, 1000 + pages, { timestamp: new Date().toISOString() })]);
  } while (cursor);
  assert.is(pages, 5);
  assert.is(seen.length, 23);
  assert.equal(new Set(seen), new Set(events.map((e) => e.id)));
  // Another product's cursor position is refused.
  const other = (await stack.newProduct()).api;
  const page = await api.get(`/users/${userId}/gate-events?limit=1`);
  await other.post("/users", { external_user_id: userId });
  assert.is((await other.get(`/users/${userId}/gate-events?cursor=${page.body.next_cursor}`)).status, 400);
});

t.run();
