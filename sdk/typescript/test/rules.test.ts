// Pure rules: one table of pricing cases held against both the library and the service, and
// the library's gate, period and session arithmetic.
import { readFileSync } from "node:fs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { manualCost, type Pricing as ServicePricing } from "../../../services/ingestion/domain/cost.ts";
import { evaluate } from "../src/gates.ts";
import { applyView, rollLocally } from "../src/periods.ts";
import { price, type Pricing } from "../src/pricing.ts";
import { UserEntry } from "../src/state.ts";
import type { PlanConfig, SessionView } from "../src/types.ts";

interface Case {
  name: string;
  model: string | null;
  input_tokens: number;
  output_tokens: number;
  tool_calls: string[];
  expect: { model: string | null; cost_tokens: number; cost_tools: number; cost_total: number };
}
const table = JSON.parse(readFileSync(new URL("./rules.json", import.meta.url), "utf8")) as {
  pricing: Pricing;
  cases: Case[];
  without_plan: Case[];
};

function servicePricing(p: Pricing): ServicePricing {
  return {
    costRates: p.cost_rates,
    modelLimits: p.model_limits,
    defaultCostRate: p.default_cost_rate ?? undefined,
    toolCosts: p.tool_costs,
    defaultToolCost: p.default_tool_cost,
  };
}

const near = (a: number, b: number) => Math.abs(a - b) < 1e-12;
function same(actual: { model: string | null; cost_tokens: number; cost_tools: number; cost_total: number }, c: Case, who: string) {
  const e = c.expect;
  assert.is(actual.model, e.model, `${who}: ${c.name}: model`);
  for (const k of ["cost_tokens", "cost_tools", "cost_total"] as const) {
    assert.ok(near(actual[k], e[k]), `${who}: ${c.name}: ${k} ${actual[k]} != ${e[k]}`);
  }
}

const rules = suite("sdk: rules shared with the service");

rules("pricing table: the library and the service agree with every case", () => {
  for (const [cases, pricing] of [[table.cases, table.pricing], [table.without_plan, null]] as const) {
    for (const c of cases) {
      same(price(c.model, c.input_tokens, c.output_tokens, c.tool_calls, pricing), c, "sdk");
      const s = manualCost(
        { model: c.model ?? undefined, inputTokens: c.input_tokens, outputTokens: c.output_tokens, toolCalls: c.tool_calls },
        pricing ? servicePricing(pricing) : null,
      );
      same({ model: s.model, cost_tokens: s.costTokens, cost_tools: s.costTools, cost_total: s.costTotal }, c, "service");
    }
  }
});

const PLAN: PlanConfig = {
  max_spend_per_period: 10,
  max_spend_per_session: 2,
  soft_gate_at: 0.8,
  hard_gate_at: 1,
  model_limits: { m: { max_tokens_per_period: 1000 } },
  cost_rates: {},
  session_timeout_minutes: 30,
  default_cost_rate: null,
  tool_costs: {},
  default_tool_cost: 0.02,
  pre_call_estimate: false,
  pre_call_buffer_tokens: 4096,
};
const use = (o: Partial<Parameters<typeof evaluate>[1]> = {}) => ({
  periodCost: 0, sessionCost: 0, model: "m", modelTokens: 0, estimateCost: 0, estimateTokens: 0, ...o,
});

rules("gates: the worst dimension decides; thresholds; a cap of 0; unset limits", () => {
  assert.is(evaluate(PLAN, use()).status, "ok");
  assert.equal(evaluate(PLAN, use({ periodCost: 8 })), {
    status: "soft_gate", gate_reason: "total_spend", usage_pct: 0.8, current_value: 8, limit_value: 10,
    message: evaluate(PLAN, use({ periodCost: 8 })).message,
  });
  // Session at 90% outranks period at 80% (both soft); a hard one outranks both.
  assert.is(evaluate(PLAN, use({ periodCost: 8, sessionCost: 1.8 })).gate_reason, "session_spend");
  const hard = evaluate(PLAN, use({ periodCost: 8, sessionCost: 1.8, modelTokens: 1000 }));
  assert.is(hard.status, "hard_gate");
  assert.is(hard.gate_reason, "model_limit:m");
  assert.is(evaluate(PLAN, use({ model: "other", modelTokens: 5000 })).status, "ok");
  assert.is(evaluate({ ...PLAN, max_spend_per_period: 0 }, use()).status, "hard_gate");
  assert.is(evaluate({ ...PLAN, max_spend_per_period: null, max_spend_per_session: null, model_limits: {} }, use({ periodCost: 1e9 })).status, "ok");
  assert.is(evaluate(null, use({ periodCost: 1e9 })).status, "ok");
  // Float sums landing a hair short of a threshold still reach it.
  assert.is(evaluate(PLAN, use({ periodCost: 0.1 * 3 * (8 / 0.3) - 1e-13 })).status, "soft_gate");
  // Per-plan thresholds.
  assert.is(evaluate({ ...PLAN, soft_gate_at: 0.5, hard_gate_at: 0.9 }, use({ periodCost: 9 })).status, "hard_gate");
});

rules("gates with an estimate: a call that would land exactly on the cap runs, one past it is blocked", () => {
  assert.is(evaluate(PLAN, use({ periodCost: 9, estimateCost: 1 })).status, "soft_gate");
  const r = evaluate(PLAN, use({ periodCost: 9, estimateCost: 1.01 }));
  assert.is(r.status, "hard_gate");
  assert.ok(Math.abs(r.current_value - 10.01) < 1e-9);
  assert.is(evaluate(PLAN, use({ modelTokens: 900, estimateTokens: 101 })).gate_reason, "model_limit:m");
});

rules("gate messages say what was spent and, apart, what the call's estimate would add", () => {
  assert.is(evaluate(PLAN, use({ periodCost: 8 })).message, "Spend approaching the limit: $8.0000 of $10.00 spent (80%)");
  assert.is(
    evaluate(PLAN, use({ sessionCost: 0.48 * 4, estimateCost: 0.0804 * 4 })).message,
    "Session spend limit reached: $1.9200 of $2.00 spent (96%); this call's estimate of $0.3216 would bring it to $2.2416 (112%)",
  );
  assert.is(
    evaluate(PLAN, use({ modelTokens: 900, estimateTokens: 200 })).message,
    "Token limit reached for m this period: 900 of 1000 tokens used (90%); this call's estimate of 200 tokens would bring it to 1100 (110%)",
  );
});

function view(over: Partial<SessionView> = {}, usage: Partial<SessionView["current_usage"]> = {}): SessionView {
  return {
    user_id: "u", service_user_id: "s1", plan: "pro", sdk_enabled: true, plan_config: PLAN,
    current_usage: { period_cost: 1, period_tokens_total: 10, period_tokens_by_model: { m: 10 }, period_cost_by_model: { m: 1 }, ...usage },
    billing_period: { start: "2026-11-01T00:00:00.000Z", end: "2026-12-01T00:00:00.000Z" },
    ...over,
  };
}

rules("periods: same dates keep the larger counters; fresh dates take the service's; a new service_user_id resets", () => {
  const now = Date.parse("2026-11-15T00:00:00Z");
  const e = new UserEntry("u", now);
  assert.is(applyView(e, view(), now), "first");
  e.periodCost += 2; // delivered later
  e.tokensByModel.m = 30;
  assert.is(applyView(e, view({}, { period_cost: 1.5, period_tokens_by_model: { m: 50 } }), now), "same_period");
  assert.is(e.periodCost, 3);
  assert.equal({ ...e.tokensByModel }, { m: 50 }); // a prototype-less record: compared by its entries
  assert.is(applyView(e, view({ billing_period: { start: "2026-11-10T00:00:00.000Z", end: "2026-12-10T00:00:00.000Z" } }, { period_cost: 0.25 }), now), "fresh_period");
  assert.is(e.periodCost, 0.25);
  const before = e.sessions.own.id;
  e.periodCost = 7;
  assert.is(applyView(e, view({ service_user_id: "s2", billing_period: { start: "2026-11-10T00:00:00.000Z", end: "2026-12-10T00:00:00.000Z" } }, { period_cost: 0 }), now), "reset");
  assert.is(e.periodCost, 0);
  assert.is.not(e.sessions.own.id, before);
  assert.is(e.serviceUserId, "s2");
  // No plan in force: nothing gated.
  applyView(e, view({ sdk_enabled: false, service_user_id: "s2", plan: "none" }), now);
  assert.is(e.config, null);
});

rules("periods: past period_end with no answer, counters clear and the next period is as long as the last", () => {
  const e = new UserEntry("u", Date.parse("2026-11-15T00:00:00Z"));
  applyView(e, view({ billing_period: { start: "2026-11-01T00:00:00.000Z", end: "2026-11-11T00:00:00.000Z" } }), 0);
  rollLocally(e, Date.parse("2026-11-25T00:00:00Z"));
  assert.is(e.periodStart, "2026-11-21T00:00:00.000Z");
  assert.is(e.periodEnd, "2026-12-01T00:00:00.000Z");
  assert.is(e.periodCost, 0);
  assert.equal({ ...e.tokensByModel }, {});
});

rules("sessions: the library's own rotates after the window from its start; caller sessions are kept apart", () => {
  const e = new UserEntry("u", 0);
  e.timeoutMs = 1000;
  const a = e.sessions.at(undefined, 0, 1000);
  a.cost = 1;
  assert.is(e.sessions.at(undefined, 999, 1000), a);
  const b = e.sessions.at(undefined, 1000, 1000);
  assert.is.not(b.id, a.id);
  assert.is(b.cost, 0);
  const c = e.sessions.at("chat", 1000, 1000);
  assert.is(c.id, "chat");
  assert.is(e.sessions.at("chat", 1500, 1000), c);
  assert.is(e.idle(2000), false);
  assert.is(e.idle(2500), true);
});

rules.run();
