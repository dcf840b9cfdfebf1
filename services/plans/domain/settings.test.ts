import { test } from "uvu";
import * as assert from "uvu/assert";
import { create } from "@bufbuild/protobuf";
import { PlanSettingsSchema } from "@meter/proto/meter/plans/v1/plans_pb";
import { PLAN_DEFAULTS, PLAN_FIELDS, applyMask, fromSettings, newPlanValues, planProblems, roundAmounts } from "./settings.ts";

test("a new plan takes its own gates, then the request's, then the defaults", () => {
  assert.equal(newPlanValues({ name: "a" }), { ...PLAN_DEFAULTS, name: "a" });
  const req = { soft_gate_at: 0.5, hard_gate_at: undefined };
  assert.is(newPlanValues({ name: "a" }, req).soft_gate_at, 0.5);
  assert.is(newPlanValues({ name: "a" }, req).hard_gate_at, 1);
  assert.is(newPlanValues({ name: "a", soft_gate_at: 0.6 }, req).soft_gate_at, 0.6);
});

test("the defaults (the rules module's, held to the API's rules by its table of cases) make a valid plan", () => {
  assert.equal(planProblems(newPlanValues({ name: "ok" })), []);
});

test("settings messages convert only the fields set", () => {
  assert.equal(fromSettings(create(PlanSettingsSchema)), {});
  const s = create(PlanSettingsSchema, {
    name: "n",
    maxSpendPerPeriod: 0,
    preCallEstimate: false,
    preCallBufferTokens: 10n,
    modelLimits: { m: { maxTokensPerPeriod: 5n } },
    defaultCostRate: { input: 1, output: 2 },
  });
  assert.equal(fromSettings(s), {
    name: "n",
    max_spend_per_period: 0,
    pre_call_estimate: false,
    pre_call_buffer_tokens: 10,
    model_limits: { m: 5 },
    default_cost_rate: { input: 1, output: 2 },
  });
});

test("a mask changes named fields only; a named unset field returns to its default", () => {
  const current = newPlanValues({ name: "p", max_spend_per_period: 10, tool_costs: { t: 1 }, soft_gate_at: 0.5 });
  const next = applyMask(current, { max_spend_per_session: 3, soft_gate_at: 0.7 }, ["max_spend_per_session", "max_spend_per_period", "tool_costs"]);
  assert.is(next.max_spend_per_session, 3);
  assert.is(next.max_spend_per_period, null);
  assert.equal(next.tool_costs, {});
  assert.is(next.soft_gate_at, 0.5);
  assert.is(current.max_spend_per_period, 10, "input left untouched");
  assert.equal(applyMask(current, {}, []), current);
});

test("a mask refuses unknown fields and clearing the name", () => {
  const current = newPlanValues({ name: "p" });
  assert.throws(() => applyMask(current, {}, ["colour"]), /unknown plan field "colour"/);
  assert.throws(() => applyMask(current, {}, ["name"]), /name cannot be cleared/);
  for (const f of PLAN_FIELDS.filter((f) => f !== "name")) applyMask(current, {}, [f]);
});

test("every problem is named with its field", () => {
  const bad = newPlanValues({
    name: " ",
    max_spend_per_period: -1,
    session_timeout_minutes: 0,
    soft_gate_at: 1.2,
    hard_gate_at: 1,
    model_limits: { m: 1.5 },
    cost_rates: { m: { input: Infinity, output: 0 } },
    tool_costs: { "": 1 },
    pre_call_buffer_tokens: -2,
  });
  const problems = planProblems(bad, "plans[0].");
  for (const needle of [
    "plans[0].name must not be empty",
    "plans[0].max_spend_per_period must be a number of dollars, 0-1,000,000,000",
    "plans[0].session_timeout_minutes must be a positive number",
    "plans[0].soft_gate_at must be between 0 and 1",
    "plans[0].soft_gate_at (1.2) must not exceed plans[0].hard_gate_at (1)",
    "plans[0].model_limits.m.max_tokens_per_period must be a non-negative integer",
    "plans[0].cost_rates.m.input must be a number of dollars, 0-1,000,000,000",
    "plans[0].tool_costs keys must be 1-255 characters",
    "plans[0].pre_call_buffer_tokens must be a non-negative integer",
  ]) {
    assert.ok(problems.includes(needle), `missing: ${needle} in ${problems.join(" | ")}`);
  }
  assert.equal(planProblems(newPlanValues({ name: "x", soft_gate_at: 1, hard_gate_at: 1, max_spend_per_period: 0 })), []);
  // Amounts no call's cost can overflow from: a rate of 1e300 made every event of its plan unpriceable.
  const huge = planProblems(newPlanValues({ name: "h", max_spend_per_period: 1e9, cost_rates: { m: { input: 1e300, output: 1e9 } }, tool_costs: { t: 2e9 } }));
  assert.equal(huge, ["cost_rates.m.input must be a number of dollars, 0-1,000,000,000", "tool_costs.t must be a number of dollars, 0-1,000,000,000"]);
});


const limit = (name: string, metric: "spend" | "requests", max: number, window: "day" | "minute") => ({ name, metric, max, window, duration_minutes: null, model: null, soft_gate_at: null, hard_gate_at: null });

test("amounts are kept to the nano-dollar: float noise goes, an amount below the unit is refused (it would be a $0 cap)", () => {
  const v = newPlanValues({
    name: "noisy",
    max_spend_per_period: 0.30000000000000004,
    max_spend_per_session: 11.000000000000002,
    tool_costs: { search: 0.1 + 0.2 },
    default_tool_cost: 0.020000000000000004,
    credits_low_at: 1.0000000000000002,
    limits: [limit("daily", "spend", 0.1 + 0.2, "day"), limit("rpm", "requests", 60, "minute")],
    cost_rates: { m: { input: 0.0030000000000000005, output: 0.001 } },
  });
  assert.equal(planProblems(v), []);
  const kept = roundAmounts(v);
  assert.equal(
    [kept.max_spend_per_period, kept.max_spend_per_session, kept.tool_costs.search, kept.default_tool_cost, kept.credits_low_at, kept.limits[0]!.max, kept.limits[1]!.max],
    [0.3, 11, 0.3, 0.02, 1, 0.3, 60],
  );
  assert.is(kept.cost_rates.m!.input, 0.0030000000000000005, "rates per 1K tokens are kept as sent: a price is rounded at the event");
  assert.is(roundAmounts(newPlanValues({ name: "big", max_spend_per_period: 4322804.9 })).max_spend_per_period, 4322804.9, "a large amount keeps its digits");
  const tiny = newPlanValues({ name: "tiny", max_spend_per_period: 4e-10, credits_low_at: 1e-10, limits: [limit("d", "spend", 2e-10, "day")] });
  const problems = planProblems(tiny);
  for (const f of ["max_spend_per_period", "credits_low_at", "limits[0]"]) assert.ok(problems.some((p) => p.includes(f) && p.includes("at least 0.000000001")), `${f}: ${problems.join("; ")}`);
  assert.equal(planProblems(newPlanValues({ name: "zero", max_spend_per_period: 0, credits_low_at: 0 })), [], "0 is a cap like any other");
});

test("limits: a plan's own gates resolve a limit's; problems name the limit and the field", () => {
  const plan = newPlanValues({
    name: "w",
    soft_gate_at: 0.9,
    limits: [
      { name: "a", metric: "spend", max: 1, window: "day", duration_minutes: null, model: null, soft_gate_at: null, hard_gate_at: 0.5 },
      { name: "b", metric: "spend", max: 1, window: "rolling", duration_minutes: 60, model: null, soft_gate_at: null, hard_gate_at: null },
    ],
  });
  // "a": the plan's soft gate 0.9 above its own hard gate 0.5; "b" uses the plan's, which are fine.
  assert.equal(planProblems(plan), ['limits[0] ("a").soft_gate_at: 0.9 must not exceed hard_gate_at (0.5)']);
  assert.equal(applyMask(plan, {}, ["limits", "time_zone"]).limits, []);
  assert.is(applyMask(plan, {}, ["time_zone"]).time_zone, "UTC");
});

test.run();
