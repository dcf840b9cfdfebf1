import * as assert from "uvu/assert";
import { eventually } from "../../../test/support/eventually.ts";
import { LimitExceededError, Meter, currentUser, type GuardResult, type MeterOptions, type UsageEvent } from "../src/index.ts";
import { createPlan, createUser, DAY, gateEvents, memoryLogger, near, type ProductCtx, rejects, stackMeter, stackSuite, type StackCtx, subscribe, usage } from "./support/fixtures.ts";
import { FaultProxy } from "./support/proxy.ts";
import { commitNow, reserveNow } from "../src/internal.ts";

const t = stackSuite<{ proxy: FaultProxy }>("sdk: gates, sessions, periods over HTTP", "sdk", {
  stack: { services: { ingestion: { relayIntervalMs: 50 } } },
  before: async (ctx) => {
    // Only to count requests here; no faults.
    ctx.proxy = await FaultProxy.start(ctx.stack.apiUrl);
    ctx.proxies.push(ctx.proxy);
  },
});

const meter = (ctx: StackCtx & { proxy: FaultProxy }, opts: MeterOptions = {}): Meter => stackMeter(ctx, { baseURL: ctx.proxy.apiUrl, logger: memoryLogger(), ...opts });

const RATES = { "gpt-4o": { input: 1, output: 2 }, "gpt-4o-mini": { input: 0.1, output: 0.2 } };

t("period spend: soft then hard gate, callbacks in order, errors in callbacks stop nothing, totals on the service", async (ctx) => {
  const userId = await createUser(ctx.api, { max_spend_per_period: 1, cost_rates: RATES });
  const m = meter(ctx);
  const calls: string[] = [];
  let errorSeenByCallback = false;
  m.onSoftGate((r, c) => void calls.push(`soft1:${r.gate_reason}:${c.user_id}`));
  m.onSoftGate(() => {
    throw new Error("callback bug");
  });
  m.onSoftGate(async () => {
    calls.push("soft3");
    throw new Error("async callback bug");
  });
  m.onHardGate((r) => void calls.push(`hard1:${r.status}`));
  m.onHardGate(() => {
    errorSeenByCallback = true;
  });
  const events: UsageEvent[] = [];
  m.onUsage((e) => void events.push(e));

  assert.is((await m.guard(userId, { model: "gpt-4o" })).status, "ok");
  // 8 calls of 100 input tokens at $1/1K: $0.80, the soft threshold.
  for (let i = 0; i < 8; i++) await m.record(userId, { model: "gpt-4o", input_tokens: 100 });
  const soft = await m.guard(userId, { model: "gpt-4o" });
  assert.is(soft.status, "soft_gate");
  assert.is(soft.gate_reason, "total_spend");
  assert.ok(near(soft.usage_pct, 0.8) && near(soft.current_value, 0.8) && soft.limit_value === 1, JSON.stringify(soft));
  assert.equal(calls, [`soft1:total_spend:${userId}`, "soft3"]);

  await m.record(userId, { model: "gpt-4o", input_tokens: 100, output_tokens: 50 }); // $0.20
  let err: unknown;
  try {
    await m.guard(userId, { model: "gpt-4o" });
  } catch (e) {
    err = e;
    assert.ok(errorSeenByCallback, "hard-gate callbacks fire before the error is thrown");
  }
  assert.instance(err, LimitExceededError);
  const le = err as LimitExceededError;
  assert.is(le.statusCode, 429);
  assert.is(le.result.status, "hard_gate");
  assert.is(le.result.gate_reason, "total_spend");
  assert.ok(le.result.usage_pct >= 1);
  assert.equal(calls.slice(2), ["hard1:hard_gate"]);
  // call() does not run the function on a hard gate.
  let ran = false;
  await rejects(() => m.call(userId, { model: "gpt-4o", usage: () => ({}) }, () => (ran = true)));
  assert.is(ran, false);

  assert.is(events.length, 9);
  assert.is(events[8]!.cost_total, 0.1 + 0.1);
  assert.is(m.state(userId)!.period_cost, events.reduce((s, e) => s + e.cost_total, 0));
  assert.ok(await m.flush());
  assert.ok(events.every((e) => e.synced));
  const u = await eventually(async () => {
    const x = await usage(ctx.api, userId);
    return near(x.total_cost, 1) ? x : null;
  });
  assert.is(u.total_tokens, 950);
});

t("gate events: at most one row per user and reason per 5 s; blocked only when the call was blocked", async (ctx) => {
  const blockedUser = await createUser(ctx.api, { max_spend_per_period: 0 });
  const openUser = await createUser(ctx.api, { max_spend_per_period: 0 });
  const blocking = meter(ctx);
  const lenient = meter(ctx, { blocking: false });
  const seen: GuardResult[] = [];
  lenient.onHardGate((r) => void seen.push(r));
  for (let i = 0; i < 5; i++) await rejects(() => blocking.guard(blockedUser, { model: "x" }), LimitExceededError);
  let ran = 0;
  for (let i = 0; i < 3; i++) await lenient.call(openUser, { model: "x", usage: () => ({ input_tokens: 1 }) }, () => ran++);
  assert.is(ran, 3, "with blocking off the call proceeds");
  assert.is(seen.length, 3, "and the callbacks fire every time");
  await blocking.flush();
  await lenient.flush();
  const b = await eventually(async () => {
    const rows = await gateEvents(ctx.api, blockedUser);
    return rows.length > 0 ? rows : null;
  });
  assert.is(b.length, 1);
  assert.is(b[0].blocked, true);
  assert.is(b[0].status, "hard_gate");
  assert.is(b[0].gate_reason, "total_spend");
  const o = await gateEvents(ctx.api, openUser);
  assert.is(o.length, 1);
  assert.is(o[0].blocked, false);
});

t("session spend: per session id; the library's own session rotates after session_timeout_minutes", async (ctx) => {
  // 0.05 minutes = 3 s window, counted from the session's start.
  const userId = await createUser(ctx.api, { max_spend_per_session: 0.5, session_timeout_minutes: 0.05, cost_rates: RATES });
  const m = meter(ctx);
  const first = await m.record(userId, { model: "gpt-4o", input_tokens: 500 });
  const state = m.state(userId)!;
  assert.is(state.session_id, first.session_id);
  assert.is(state.session_cost, 0.5);
  const hard = await m.guard(userId, { model: "gpt-4o" }).catch((e: LimitExceededError) => e.result);
  assert.is(hard.gate_reason, "session_spend");
  // Another (caller-given) session has its own budget.
  assert.is((await m.guard(userId, { model: "gpt-4o", session_id: "chat-42" })).status, "ok");
  const rec = await m.record(userId, { model: "gpt-4o", input_tokens: 100, session_id: "chat-42" });
  assert.is(rec.session_id, "chat-42");
  // After the window the id rotates and the cost starts again; period spend is kept.
  await eventually(async () => (await m.guard(userId, { model: "gpt-4o" })).status === "ok", 20_000, "session rotation");
  const after = m.state(userId)!;
  assert.is.not(after.session_id, first.session_id);
  assert.is(after.session_cost, 0);
  assert.ok(near(after.period_cost, 0.6));
});

t("model limits and prices: longest-prefix names, default rate, tool costs", async (ctx) => {
  const userId = await createUser(ctx.api, {
    model_limits: { "gpt-4o": { max_tokens_per_period: 1000 } },
    cost_rates: RATES,
    default_cost_rate: { input: 3, output: 4 },
    tool_costs: { search: 0.05 },
    default_tool_cost: 0.01,
  });
  const m = meter(ctx);
  const e = await m.record(userId, { model: "gpt-4o-2024-08-06", input_tokens: 600, output_tokens: 400, tool_calls: ["search", "browse"] });
  assert.is(e.model, "gpt-4o");
  assert.ok(near(e.cost_tokens, 0.6 + 0.8));
  assert.ok(near(e.cost_tools, 0.06));
  assert.ok(near(e.cost_total, 1.46));
  const r = await m.guard(userId, { model: "gpt-4o-2024-11-20" }).catch((x: LimitExceededError) => x.result);
  assert.is(r.status, "hard_gate");
  assert.is(r.gate_reason, "model_limit:gpt-4o");
  assert.is(r.current_value, 1000);
  // The longer name wins: gpt-4o-mini has no limit.
  assert.is((await m.guard(userId, { model: "gpt-4o-mini-2024-07-18" })).status, "ok");
  const other = await m.record(userId, { model: "claude-x", input_tokens: 1000 });
  assert.is(other.model, "claude-x");
  assert.ok(near(other.cost_total, 3));
  assert.equal(m.state(userId)!.period_tokens_by_model, { "gpt-4o": 1000, "claude-x": 1000 });
});

t("a model the plan prices none of is said once (its tokens cost $0 and count toward no cap); a plan that prices nothing says nothing", async (ctx) => {
  const logger = memoryLogger();
  const m = meter(ctx, { logger });
  const userId = await createUser(ctx.api, { cost_rates: RATES });
  const priced = await m.record(userId, { model: "gpt-4o", input_tokens: 1000 });
  assert.ok(priced.cost_total > 0);
  for (let i = 0; i < 3; i++) assert.is((await m.record(userId, { model: "unlisted-model", input_tokens: 1000 })).cost_total, 0);
  const said = logger.lines.filter((l) => l.includes('model "unlisted-model" has no rate'));
  assert.is(said.length, 1, JSON.stringify(logger.lines));
  assert.match(said[0]!, /its cost_rates price gpt-4o.*add the model to the plan's cost_rates/);
  // Token caps only: nothing priced on purpose, nothing said.
  const tokensOnly = await createUser(ctx.api, { model_limits: { m: { max_tokens_per_period: 10_000 } } });
  await m.record(tokensOnly, { model: "m", input_tokens: 10 });
  assert.is(logger.lines.filter((l) => l.includes("has no rate")).length, 1);
});

t("permissive defaults: no plan, a user the service does not know; a cap of 0 blocks everything", async (ctx) => {
  const m = meter(ctx);
  const noPlan = await createUser(ctx.api);
  const stranger = `never-registered-${Date.now()}`;
  for (const u of [noPlan, stranger]) {
    assert.is((await m.guard(u, { model: "gpt-4o", input_tokens: 1e6 })).status, "ok");
    const e = await m.record(u, { model: "gpt-4o", input_tokens: 1000, tool_calls: ["search"] });
    assert.is(e.cost_total, 0, "no plan, no prices");
  }
  assert.is(m.state(noPlan)!.plan, "none");
  assert.is(m.state(stranger)!.service_user_id, null);
  const capped = await createUser(ctx.api, { max_spend_per_period: 0 });
  const r = await m.guard(capped).catch((e: LimitExceededError) => e.result);
  assert.is(r.status, "hard_gate");
});

t("session views: loaded once for concurrent first calls, onSessionStart once, refreshed; plan changes keep or reset counters", async (ctx) => {
  const start = new Date(Date.now() - DAY);
  const end = new Date(Date.now() + 10 * DAY);
  const userId = await createUser(ctx.api, { max_spend_per_period: 100, cost_rates: RATES }, { start, end });
  const m = meter(ctx, { refreshIntervalMs: 200, flushIntervalMs: 60_000 });
  const started: unknown[] = [];
  m.onSessionStart((s) => void started.push(s));
  const before = ctx.proxy.count(new RegExp(`GET /users/${userId}/session`));
  await Promise.all(Array.from({ length: 20 }, () => m.guard(userId, { model: "gpt-4o" })));
  assert.is(ctx.proxy.count(new RegExp(`GET /users/${userId}/session`)) - before, 1);
  assert.equal(started, [{ user_id: userId, plan: m.state(userId)!.plan, billing_period: { start: start.toISOString(), end: end.toISOString() } }]);

  // Same dates, new plan: the larger of local (undelivered $2) and service ($1 from elsewhere) is kept.
  await m.record(userId, { model: "gpt-4o", input_tokens: 2000 });
  const res = await ctx.api.post("/events/batch", [
    { id: crypto.randomUUID(), user_id: userId, timestamp: new Date().toISOString(), model: "gpt-4o", input_tokens: 1000, cost_total: 1 },
  ]);
  assert.is(res.status, 200);
  const bigger = await createPlan(ctx.api, { max_spend_per_period: 500, cost_rates: RATES });
  await subscribe(ctx.api, userId, bigger, start, end);
  await eventually(async () => {
    await m.guard(userId, { model: "gpt-4o" });
    const s = m.state(userId)!;
    return s.plan !== (started[0] as { plan: string }).plan && s.period_cost === 2;
  }, 10_000, "plan change with the same dates");

  // Fresh dates: local counters are zeroed and the service's values taken.
  const freshStart = new Date();
  await subscribe(ctx.api, userId, bigger, freshStart, new Date(freshStart.getTime() + 30 * DAY));
  await eventually(async () => {
    await m.guard(userId, { model: "gpt-4o" });
    const s = m.state(userId)!;
    return s.billing_period.start === freshStart.toISOString() && s.period_cost === 0;
  }, 10_000, "fresh period");
  assert.is(started.length, 1);
});

t("period rollover: after period_end the session is fetched again and the service's new period taken", async (ctx) => {
  const end = new Date(Date.now() + 1_500);
  const userId = await createUser(ctx.api, { max_spend_per_period: 1, cost_rates: RATES }, { start: new Date(Date.now() - DAY), end });
  const m = meter(ctx);
  await m.record(userId, { model: "gpt-4o", input_tokens: 1000 });
  await rejects(() => m.guard(userId, { model: "gpt-4o" }), LimitExceededError);
  await eventually(() => Date.now() > end.getTime() + 10, 10_000);
  // The window is over: the service attributes to the calendar month, where nothing was spent.
  assert.is((await m.guard(userId, { model: "gpt-4o" })).status, "ok");
  const s = m.state(userId)!;
  assert.is(s.period_cost, 0);
  assert.ok(Date.parse(s.billing_period.end) > Date.now());
});

/** A user on a $1 plan at $1 per 1K tokens of model m, whose calls are estimated before they run. */
const estimatingUser = (api: ProductCtx["api"], bufferTokens: number) =>
  createUser(api, { max_spend_per_period: 1, cost_rates: { m: { input: 1, output: 1 } }, pre_call_estimate: true, pre_call_buffer_tokens: bufferTokens });

t("pre-call estimate: concurrent calls never take spend past the cap", async (ctx) => {
  // Each call: 100 input + up to 100 output tokens at $1/1K = at most $0.20; the cap holds 5.
  const userId = await estimatingUser(ctx.api, 100);
  const m = meter(ctx);
  await m.guard(userId, { model: "m" });
  let ran = 0;
  const outcomes = await Promise.allSettled(
    Array.from({ length: 100 }, (_, i) =>
      m.call(userId, { model: "m", input_tokens: 100, usage: (out: number) => ({ input_tokens: 100, output_tokens: out }) }, async () => {
        ran++;
        await new Promise((r) => setTimeout(r, 5 + (i % 7)));
        return 100;
      }),
    ),
  );
  assert.is(outcomes.filter((o) => o.status === "fulfilled").length, 5);
  assert.is(ran, 5);
  assert.ok(outcomes.filter((o) => o.status === "rejected").every((o) => (o as PromiseRejectedResult).reason instanceof LimitExceededError));
  assert.ok(near(m.state(userId)!.period_cost, 1));
  await m.flush();
  await eventually(async () => near((await usage(ctx.api, userId)).total_cost, 1));
});

t("reserve: commit settles with the real cost, release gives the estimate back; call() records nothing when the function throws", async (ctx) => {
  const userId = await estimatingUser(ctx.api, 500);
  const m = meter(ctx);
  const a = await m.reserve(userId, { model: "m", input_tokens: 400 }); // holds $0.90
  assert.is(a.model, "m");
  assert.is(a.result.status, "soft_gate");
  await rejects(() => m.reserve(userId, { model: "m", input_tokens: 400 }), LimitExceededError);
  a.release();
  a.release();
  await rejects(() => a.commit({ input_tokens: 1 }), /released/);
  const b = await m.reserve(userId, { model: "m", input_tokens: 400 });
  const e = await b.commit({ input_tokens: 400, output_tokens: 100 });
  assert.ok(near(e.cost_total, 0.5));
  await rejects(() => b.commit({}), /committed/);
  assert.ok(near(m.state(userId)!.period_cost, 0.5));
  const usageEvents: UsageEvent[] = [];
  m.onUsage((x) => void usageEvents.push(x));
  await rejects(
    () => m.call(userId, { model: "m", input_tokens: 0, usage: () => ({ output_tokens: 10 }) }, () => Promise.reject(new Error("provider down"))),
    /provider down/,
  );
  // A usage() that returns nonsense: refused, and the hold given back too.
  await rejects(() => m.call(userId, { model: "m", input_tokens: 0, usage: () => ({ output_tokens: -1 }) }, () => 1), TypeError);
  assert.is(usageEvents.length, 0);
  assert.ok(near(m.state(userId)!.period_cost, 0.5));
  // Nothing is left held: a call estimated at exactly the remaining $0.50 runs.
  assert.is((await m.guard(userId, { model: "m", input_tokens: 0 })).status, "soft_gate");
});

t("reserveNow/commitNow: a warm user is held, gated and recorded in the caller's tick; a user not loaded yet waits for reserve()", async (ctx) => {
  const userId = await createUser(ctx.api, { max_spend_per_period: 1, cost_rates: { m: { input: 1, output: 1 } }, pre_call_estimate: true, pre_call_buffer_tokens: 500 });
  const m = meter(ctx);
  assert.is(reserveNow(m, userId, { model: "m", input_tokens: 400 }), undefined, "the view is not loaded: nothing held");
  await m.guard(userId, { model: "m" });
  const a = reserveNow(m, userId, { model: "m", input_tokens: 400 }); // holds $0.90, like reserve()
  assert.ok(a, "a warm user is reserved at once");
  assert.is(a!.result.status, "soft_gate");
  assert.throws(() => reserveNow(m, userId, { model: "m", input_tokens: 400 }), (err: unknown) => err instanceof LimitExceededError);
  const event = commitNow(a!, { input_tokens: 400, output_tokens: 100 });
  assert.ok(near(event.cost_total, 0.5));
  assert.throws(() => commitNow(a!, {}), /committed/);
  assert.ok(near(m.state(userId)!.period_cost, 0.5));
  assert.throws(() => reserveNow(m, "", {}), TypeError);
  // A value JSON cannot carry is refused when recorded, never queued to fail its whole batch.
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  for (const metadata of [{ n: 1n }, cycle]) await rejects(() => m.record(userId, { input_tokens: 1, metadata }), TypeError);
  // Likewise where a gate event or a reservation takes it (the usage event's metadata at commit).
  for (const metadata of [{ n: 1n }, cycle]) {
    await rejects(() => m.guard(userId, { metadata }), TypeError);
    await rejects(() => m.reserve(userId, { metadata }), TypeError);
  }
  await m.flush();
  await eventually(async () => near((await usage(ctx.api, userId)).total_cost, 0.5), 10_000, "the event delivered");
});

t("recordManual: posted to /events, priced by the service, counted locally once, onUsage with synced", async (ctx) => {
  const userId = await createUser(ctx.api, { max_spend_per_period: 10, cost_rates: RATES });
  const m = meter(ctx);
  await m.guard(userId);
  const seen: UsageEvent[] = [];
  m.onUsage((e) => void seen.push(e));
  const a = await m.recordManual(userId, { model: "gpt-4o-2024-08-06", input_tokens: 1000, description: "import", idempotency_key: "k1" });
  assert.match(a.id, /^evt_/);
  assert.is(a.source, "manual");
  assert.is(a.model, "gpt-4o");
  assert.ok(near(a.cost, 1));
  const again = await m.recordManual(userId, { model: "gpt-4o", input_tokens: 1000, idempotency_key: "k1" });
  assert.is(again.id, a.id);
  const b = await m.recordManual(userId, { cost: 0.25 });
  assert.is(b.cost, 0.25);
  assert.is(seen.length, 2);
  assert.ok(seen.every((e) => e.synced));
  assert.ok(near(m.state(userId)!.period_cost, 1.25));
  assert.ok(near((await usage(ctx.api, userId)).total_cost, 1.25));
  await rejects(() => m.recordManual(`ghost-${Date.now()}`, { cost: 1 }), /404/);
});

t("withUser: the user travels in the async context", async (ctx) => {
  const m = meter(ctx);
  assert.is(currentUser(), undefined);
  const seen = await m.withUser("alice", async () => {
    await new Promise((r) => setTimeout(r, 1));
    return [currentUser(), m.currentUser()];
  });
  assert.equal(seen, ["alice", "alice"]);
  assert.is(currentUser(), undefined);
});

t("memory: an idle user's state is dropped after its session expires and nothing is pending", async (ctx) => {
  const userId = await createUser(ctx.api, { session_timeout_minutes: 0.01, cost_rates: RATES });
  const m = meter(ctx, { refreshIntervalMs: 200 });
  await m.record(userId, { model: "gpt-4o", input_tokens: 10 });
  assert.ok(m.state(userId));
  await eventually(() => m.stats.users === 0 || (m.stats.queued > 0 && m.flush().then(() => false)), 20_000, "eviction");
  assert.is(m.state(userId), undefined);
  assert.is(m.stats.queued, 0);
});


t("models named like Object.prototype's members are gated and metered as the plan says, with and without leases", async (ctx) => {
  const POISON = ["constructor", "__proto__", "toString", "hasOwnProperty"];
  // "__proto__" cannot be a key of a plan sent as JSON (the gateway refuses it): that model takes the default rate.
  const plan = {
    max_spend_per_period: 1000,
    pre_call_estimate: true,
    pre_call_buffer_tokens: 0,
    cost_rates: { constructor: { input: 1, output: 2 }, toString: { input: 3, output: 4 } },
    default_cost_rate: { input: 0.1, output: 0.2 },
    model_limits: { constructor: { max_tokens_per_period: 1000 }, hasOwnProperty: { max_tokens_per_period: 1000 } },
  };
  // A Map: in an object literal, `__proto__: 0.06` would not be a key.
  const price = new Map([["constructor", 0.6], ["toString", 1.6], ["__proto__", 0.06], ["hasOwnProperty", 0.06]]);
  const cost = (model: string) => price.get(model)!;
  for (const leases of [false, true]) {
    const userId = await createUser(ctx.api, plan);
    const m = meter(ctx, { leases });
    for (const model of POISON) {
      const r = await m.reserve(userId, { model, input_tokens: 400 });
      assert.is(r.result.status, "ok", `${model}: ${r.result.message}`);
      const ev = await r.commit({ input_tokens: 400, output_tokens: 100 });
      assert.is(ev.model, model);
      assert.ok(near(ev.cost_total, cost(model)), `${model} priced at ${ev.cost_total}`);
    }
    const st = m.state(userId)!;
    for (const model of POISON) {
      assert.ok(Object.hasOwn(st.period_tokens_by_model, model), `${model} counted`);
      assert.is(st.period_tokens_by_model[model], 500, `${model} tokens`);
      assert.ok(near(st.period_cost_by_model[model]!, cost(model)), `${model} cost by model: ${st.period_cost_by_model[model]}`);
    }
    // 500 tokens used of a 1,000 cap: an estimate of 600 is blocked; without leases one of 500 lands
    // on the cap and runs (with leases the service shares the last tokens out in shrinking slices).
    for (const model of ["constructor", "hasOwnProperty"]) {
      const err = await rejects(() => m.reserve(userId, { model, input_tokens: 600 }), LimitExceededError);
      assert.ok(err instanceof LimitExceededError);
      assert.is(err.result.gate_reason, `model_limit:${model}`);
      assert.is(err.result.limit_value, 1000);
      assert.ok(Number.isFinite(err.result.usage_pct), `${model}: usage_pct ${err.result.usage_pct}`);
      if (!leases) (await m.reserve(userId, { model, input_tokens: 500 })).release();
    }
    // No token cap for these: a large call passes, and the period spend stays a number.
    for (const model of ["__proto__", "toString"]) {
      const r = await m.reserve(userId, { model, input_tokens: 50_000 });
      assert.is(r.result.status, "ok", `${model}: ${r.result.message}`);
      r.release();
    }
    assert.ok(await m.flush());
    const total = (await usage(ctx.api, userId)).total_cost;
    assert.ok(near(total, 0.6 + 1.6 + 0.06 + 0.06), `service total ${total} (leases ${leases})`);
  }
});

t("ids are counted in characters as the service counts them: 200 emoji are a user id, 256 are not", async (ctx) => {
  const userId = "\u{1F600}".repeat(200);
  assert.is((await ctx.api.post("/users", { external_user_id: userId })).status, 201);
  const m = stackMeter(ctx, { logger: memoryLogger() });
  await m.record(userId, { input_tokens: 5, session_id: "\u{1F600}".repeat(255), tool_calls: ["\u{1F527}".repeat(255)] });
  assert.ok(await m.flush());
  await eventually(async () => (await usage(ctx.api, encodeURIComponent(userId))).total_tokens === 5);
  assert.throws(() => m.withUser("\u{1F600}".repeat(256), () => 1), TypeError);
  await rejects(() => m.record("\u{1F600}".repeat(256), { input_tokens: 1 }), TypeError);
  await m.shutdown();
});

t("what the service would refuse is refused at the call site, never queued to be lost: the bounds' edge is delivered", async (ctx) => {
  const userId = await createUser(ctx.api, { max_spend_per_period: 10 });
  const m = stackMeter(ctx, { logger: memoryLogger() });
  const nest = (levels: number) => {
    const top: Record<string, unknown> = {};
    let at = top;
    for (let i = 1; i < levels; i++) at = (at.a = {}) as Record<string, unknown>;
    return top;
  };
  for (const bad of [".", "..", "a\ud800b"]) await rejects(() => m.record(bad, { input_tokens: 1 }), TypeError);
  await rejects(() => m.record(userId, { input_tokens: 1_000_000_001 }), TypeError);
  await rejects(() => m.record(userId, { output_tokens: 1_000_000_001 }), TypeError);
  await rejects(() => m.record(userId, { input_tokens: 1, metadata: nest(17) }), TypeError);
  await rejects(() => m.guard(userId, { metadata: nest(17) }), TypeError);
  // A session id or model a reservation's usage (or a gate event) would carry.
  const long = "s".repeat(256);
  for (const input of [{ session_id: long }, { model: long }, { session_id: 7 as unknown as string }]) {
    await rejects(() => m.reserve(userId, input), TypeError);
    await rejects(() => m.guard(userId, input), TypeError);
    await rejects(() => m.call(userId, { ...input, usage: () => ({}) }, () => 1), TypeError);
  }
  // The edge of each bound is the service's too: delivered, none refused.
  await m.record(userId, { input_tokens: 1_000_000_000, output_tokens: 1, metadata: nest(16) });
  await (await m.reserve(userId, { session_id: "s".repeat(255), model: "m".repeat(255) })).commit({ input_tokens: 1 });
  assert.ok(await m.flush());
  assert.is(m.stats.rejected, 0);
  await eventually(async () => (await usage(ctx.api, userId)).total_tokens === 1_000_000_002, 10_000, "the events at the bounds delivered");
  // A time limit that is not a number of milliseconds (NaN from an unset variable) is refused, not waited on forever.
  for (const timeoutMs of [Number.NaN, -1, "5" as unknown as number]) {
    await rejects(() => m.flush({ timeoutMs }), TypeError);
    await rejects(() => m.shutdown({ timeoutMs }), TypeError);
  }
  await m.shutdown();
});

t("what a caller or an onUsage callback changes in a usage event is not sent; synced still reaches the caller's copy", async (ctx) => {
  const userId = await createUser(ctx.api, { max_spend_per_period: 10, cost_rates: { "gpt-4o": { input: 1, output: 1 } } });
  const m = stackMeter(ctx, { logger: memoryLogger() });
  m.onUsage((ev) => {
    ev.cost_total = 999;
    ev.metadata.note = "changed by a callback";
    ev.tool_calls.push("search");
  });
  const ev = await m.record(userId, { model: "gpt-4o", input_tokens: 1000, metadata: { route: "/chat" } });
  ev.input_tokens = 5;
  assert.ok(await m.flush());
  // A cost_total of 999 beside its parts would have been refused (422) and the usage lost.
  assert.is(m.stats.rejected, 0);
  assert.is(ev.synced, true, "the caller's copy learns of the delivery");
  const u = await eventually(async () => {
    const u = await usage(ctx.api, userId);
    return u.total_tokens === 1000 ? u : null;
  }, 10_000, "the event as recorded");
  assert.ok(near(u.total_cost, 1), `total_cost ${u.total_cost}`);
  assert.is(u.tool_calls_count, 0);
  await m.shutdown();
  assert.throws(() => stackMeter(ctx, { maxBatchSize: 10_001 }), /maxBatchSize must be at most 10,000/);
});

/** Checked by the compiler (npm run lint), never run: call()'s usage reader takes what its function returns. */
export function callTypes(m: Meter): void {
  void m.call("u", { usage: (out) => ({ input_tokens: out.tokens.prompt }) }, async () => ({ text: "hi", tokens: { prompt: 1 } }));
  void m.call("u", { usage: (n) => ({ output_tokens: n }) }, () => 5);
  // @ts-expect-error: the function's result has no `usage`; a reader of the wrong shape does not compile.
  void m.call("u", { usage: (out) => ({ input_tokens: out.usage.prompt_tokens }) }, async () => ({ text: "hi", tokens: { prompt: 1 } }));
}

t.run();
