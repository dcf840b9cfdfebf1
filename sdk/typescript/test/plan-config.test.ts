// The session view's plan_config omits unlimited caps (older services sent null): both read
// as unlimited, and a number as a cap.
import { test } from "uvu";
import * as assert from "uvu/assert";
import { evaluate } from "../src/gates.ts";
import { applyView, readPlanConfig } from "../src/session-view.ts";
import { price } from "../src/pricing.ts";
import { UserEntry } from "../src/state.ts";
import type { PlanConfigView, SessionView } from "../src/types.ts";

const BASE = {
  soft_gate_at: 0.8,
  hard_gate_at: 1,
  model_limits: {},
  cost_rates: {},
  session_timeout_minutes: 30,
  tool_costs: {},
  default_tool_cost: 0,
  pre_call_estimate: false,
  pre_call_buffer_tokens: 4096,
};

function view(plan_config: PlanConfigView): SessionView {
  return {
    user_id: "u", service_user_id: "s1", plan: "pro", sdk_enabled: true, plan_config,
    current_usage: { period_cost: 0, period_tokens_total: 0, period_tokens_by_model: {}, period_cost_by_model: {} },
    billing_period: { start: "2026-11-01T00:00:00.000Z", end: "2026-12-01T00:00:00.000Z" },
  };
}

const use = { periodCost: 1e9, sessionCost: 1e9, model: "m", modelTokens: 0, estimateCost: 0, estimateTokens: 0, periodEnd: null, sessionEnd: null, counters: [] };

test("omitted and null caps are unlimited; a number is a cap; an omitted default rate prices nothing", () => {
  const now = Date.parse("2026-11-15T00:00:00Z");
  for (const config of [BASE, { ...BASE, max_spend_per_period: null, max_spend_per_session: null, default_cost_rate: null }]) {
    const e = new UserEntry("u", now);
    applyView(e, view(config), now);
    assert.is(e.config!.max_spend_per_period, null);
    assert.is(e.config!.max_spend_per_session, null);
    assert.is(e.config!.default_cost_rate, null);
    assert.is(evaluate(e.config, use).status, "ok");
    assert.is(price("m", 1000, 1000, [], e.config).cost_total, 0);
  }
  const capped = readPlanConfig({ ...BASE, max_spend_per_session: 2, default_cost_rate: { input: 1, output: 2 } });
  assert.is(capped.max_spend_per_period, null);
  assert.is(evaluate(capped, use).gate_reason, "session_spend");
  assert.is(price("m", 1000, 1000, [], capped).cost_total, 3);
});

test.run();
