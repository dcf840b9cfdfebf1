// The library's state of a plan's windows (pure, time given): calendar windows rolling at
// their reset in the plan's time zone, rolling windows by buckets, session views merged per
// window and per bucket, reservations held on every dimension a call touches.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { evaluate } from "../src/gates.ts";
import { applyView } from "../src/session-view.ts";
import { UserEntry } from "../src/state.ts";
import type { GuardResult, LimitStatus, PlanConfig, PlanLimit, SessionView } from "../src/types.ts";

const t = suite("sdk: windows of a plan in the library's state");

const limit = (name: string, metric: PlanLimit["metric"], max: number, window: PlanLimit["window"], more: Partial<PlanLimit> = {}): PlanLimit => ({
  name, metric, max, window, duration_minutes: null, model: null, soft_gate_at: null, hard_gate_at: null, ...more,
});

function plan(limits: PlanLimit[], time_zone = "America/New_York"): PlanConfig {
  return {
    max_spend_per_period: null, max_spend_per_session: null, soft_gate_at: 0.8, hard_gate_at: 1, model_limits: {},
    cost_rates: {}, session_timeout_minutes: 30, default_cost_rate: null, tool_costs: {}, default_tool_cost: 0,
    pre_call_estimate: false, pre_call_buffer_tokens: 100, limits, time_zone,
  };
}

function view(config: PlanConfig, limits: Partial<LimitStatus>[] = []): SessionView {
  return {
    user_id: "u", service_user_id: "s1", plan: "windows", sdk_enabled: true, plan_config: config,
    current_usage: { period_cost: 0, period_tokens_total: 0, period_tokens_by_model: {}, period_cost_by_model: {} },
    billing_period: { start: "2026-11-01T00:00:00.000Z", end: "2026-12-01T00:00:00.000Z" },
    limits: limits as LimitStatus[],
  };
}

/** The gate before a call of `model` at `now` (what admission asks), without an exact estimate. */
function gate(e: UserEntry, now: number, model: string | null = null): GuardResult {
  e.advanceWindows(now);
  const session = e.sessions.at(undefined, now, e.timeoutMs);
  return evaluate(e.config, {
    periodCost: e.periodCost, sessionCost: session.cost, model, modelTokens: 0, estimateCost: 0, estimateTokens: 0,
    periodEnd: e.periodEndMs, sessionEnd: null, counters: e.counters,
  });
}

function call(e: UserEntry, at: number, cost: number, tokens = 0, model: string | null = null): void {
  e.count(e.sessions.at(undefined, at, e.timeoutMs), model, tokens, cost, at);
}

const at = (iso: string) => Date.parse(iso);

t("a day cap in the plan's time zone blocks until the next local midnight, then rolls without a reload", () => {
  const daily = limit("daily", "spend", 0.1, "day");
  const monthly = limit("monthly", "spend", 1, "month");
  const e = new UserEntry("u", at("2026-11-28T20:00:00Z"));
  applyView(e, view(plan([daily, monthly])), at("2026-11-28T20:00:00Z"));
  for (let i = 0; i < 4; i++) call(e, at("2026-11-28T20:00:00Z") + i * 60_000, 0.025);
  const blocked = gate(e, at("2026-11-28T21:00:00Z"));
  assert.is(blocked.status, "hard_gate");
  assert.is(blocked.gate_reason, "limit:daily");
  // Midnight in New York (EST, UTC-5).
  assert.is(blocked.resets_at, "2026-11-29T05:00:00.000Z");
  assert.is(gate(e, at("2026-11-29T04:59:59.999Z")).status, "hard_gate");
  const next = gate(e, at("2026-11-29T05:00:00Z"));
  assert.is(next.status, "ok");
  // The month still holds the day's spend.
  call(e, at("2026-11-29T06:00:00Z"), 0.05);
  assert.is(e.counters[1]!.used, 150_000_000);
  assert.is(e.counters[0]!.used, 50_000_000);
});

t("a rolling window releases usage as its buckets age out, without a reload", () => {
  const hourly = limit("per_hour", "requests", 3, "rolling", { duration_minutes: 60 });
  const t0 = at("2026-11-28T12:00:00Z");
  const e = new UserEntry("u", t0);
  applyView(e, view(plan([hourly], "UTC")), t0);
  call(e, t0, 0);
  call(e, t0 + 10 * 60_000, 0);
  call(e, t0 + 20 * 60_000, 0);
  const blocked = gate(e, t0 + 30 * 60_000);
  assert.is(blocked.gate_reason, "limit:per_hour");
  assert.is(blocked.status, "hard_gate");
  // The oldest bucket (60 s wide) stops counting 61 minutes after its start.
  assert.is(blocked.resets_at, new Date(t0 + 61 * 60_000).toISOString());
  assert.is(gate(e, t0 + 61 * 60_000 - 1).status, "hard_gate");
  assert.is(gate(e, t0 + 61 * 60_000).status, "soft_gate");
  assert.is(e.counters[0]!.buckets.length, 2);
});

t("requests: the call itself counts, so the sixth call of a 5-a-minute limit is blocked until the next minute", () => {
  const rpm = limit("per_minute", "requests", 5, "minute");
  const t0 = at("2026-11-28T12:00:10Z");
  const e = new UserEntry("u", t0);
  applyView(e, view(plan([rpm], "UTC")), t0);
  for (let i = 0; i < 5; i++) {
    assert.is.not(gate(e, t0 + i * 1000).status, "hard_gate", `call ${i + 1}`);
    call(e, t0 + i * 1000, 0);
  }
  const sixth = gate(e, t0 + 5000);
  assert.is(sixth.status, "hard_gate");
  assert.is(sixth.current_value, 6);
  assert.is(sixth.resets_at, "2026-11-28T12:01:00.000Z");
  assert.is(gate(e, at("2026-11-28T12:01:00Z")).status, "ok");
});

t("a session view merges per window and per bucket, taking the larger of local and service values", () => {
  const daily = limit("daily", "spend", 10, "day");
  const roll = limit("five_hours", "tokens", 1000, "rolling", { duration_minutes: 300 });
  const now = at("2026-11-28T20:00:00Z");
  const e = new UserEntry("u", now);
  const config = plan([daily, roll]);
  applyView(e, view(config), now);
  call(e, now, 1, 100);
  // The service: more spend today (other processes), less in one bucket (ours not delivered yet), one bucket we never saw.
  applyView(e, view(config, [
    { reason: "limit:daily", name: "daily", used: 3, window_start: "2026-11-28T05:00:00.000Z" },
    { reason: "limit:five_hours", name: "five_hours", used: 250, buckets: [{ start: "2026-11-28T20:00:00.000Z", used: 50 }, { start: "2026-11-28T17:00:00.000Z", used: 200 }] },
  ]), now + 1000);
  assert.is(e.counters[0]!.used, 3_000_000_000);
  assert.equal(e.counters[1]!.buckets.map((b) => [new Date(b.start).toISOString(), b.used]), [["2026-11-28T17:00:00.000Z", 200], ["2026-11-28T20:00:00.000Z", 100]]);
  // Yesterday's figure is stale: the local window stays.
  applyView(e, view(config, [{ reason: "limit:daily", name: "daily", used: 9, window_start: "2026-11-27T05:00:00.000Z" }]), now + 2000);
  assert.is(e.counters[0]!.used, 3_000_000_000);
  // The service saw midnight first: its window is taken whole.
  const after = at("2026-11-29T05:00:01Z");
  applyView(e, view(config, [{ reason: "limit:daily", name: "daily", used: 0.5, window_start: "2026-11-29T05:00:00.000Z" }]), after);
  assert.is(e.counters[0]!.start, at("2026-11-29T05:00:00Z"));
  assert.is(e.counters[0]!.used, 500_000_000);
  // A renamed limit keeps its counter (it counts the same thing).
  const kept = e.counters[1];
  applyView(e, view(plan([daily, { ...roll, name: "renamed" }])), after);
  assert.is(e.counters[1], kept);
});

t("a reservation holds against every dimension the call touches, and is given back to those", () => {
  const daily = limit("daily", "spend", 1, "day");
  const rpm = limit("per_minute", "requests", 2, "minute");
  const tokens = limit("gpt_tokens", "tokens", 1000, "week", { model: "gpt-4o" });
  const now = at("2026-11-28T20:00:00Z");
  const e = new UserEntry("u", now);
  applyView(e, view(plan([daily, rpm, tokens])), now);
  const session = e.sessions.at(undefined, now, e.timeoutMs);
  const a = { session, model: "gpt-4o", cost: 0.6, tokens: 600 };
  const b = { session, model: "other", cost: 0.3, tokens: 300 };
  e.hold(a);
  e.hold(b);
  assert.equal(e.counters.map((c) => c.held), [900_000_000, 2, 600]);
  // Two calls in flight: a third would be the third request of the minute.
  const third = gate(e, now);
  assert.is(third.status, "hard_gate");
  assert.is(third.gate_reason, "limit:per_minute");
  // A reload that drops a limit: what was held is given back to the counters that held it.
  const counters = e.counters;
  applyView(e, view(plan([daily, rpm])), now);
  e.unhold(a);
  e.unhold(b);
  assert.equal(counters.map((c) => c.held), [0, 0, 0]);
  assert.is(gate(e, now).status, "ok");
});

t("a plan without limits has no counters and gates as before", () => {
  const now = at("2026-11-28T20:00:00Z");
  const e = new UserEntry("u", now);
  const config = { ...plan([]), max_spend_per_period: 1 };
  applyView(e, view(config), now);
  assert.is(e.counters.length, 0);
  call(e, now, 1);
  const r = gate(e, now);
  assert.equal([r.status, r.gate_reason, r.resets_at], ["hard_gate", "total_spend", "2026-12-01T00:00:00.000Z"]);
});

t.run();
