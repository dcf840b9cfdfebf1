// The usage by model's rows (console/src/screens/usage-by-model.tsx): they add up to the totals.
import { test } from "uvu";
import * as assert from "uvu/assert";
import { byModel, modelLabel } from "../console/src/usage-rows.ts";
import type { Usage } from "../console/src/api/client.ts";

const usage = (u: Pick<Usage, "total_cost" | "total_tokens" | "cost_by_model" | "tokens_by_model">) => u as Usage;

test("what no model holds (a manual event's cost without a model) is a row of its own, summed in nano-dollars", () => {
  const rows = byModel(usage({ total_cost: 1.439704891, total_tokens: 49_474, cost_by_model: { "claude-sonnet-4": 0.172631, "gpt-4.1": 0.032595 }, tokens_by_model: { "claude-sonnet-4": 41_581, "gpt-4.1": 7_893 } }));
  assert.equal(
    rows.map((r) => [r.label, r.cost, r.tokens]),
    [
      ["claude-sonnet-4", 0.172631, 41_581],
      ["gpt-4.1", 0.032595, 7_893],
      ["(no model)", 1.234478891, 0],
    ],
  );
});

test("rows that add up to the totals get no remainder, float noise included; nothing at all is no row", () => {
  assert.equal(byModel(usage({ total_cost: 0.3, total_tokens: 30, cost_by_model: { a: 0.1, b: 0.2 }, tokens_by_model: { a: 10, b: 20 } })).length, 2);
  assert.equal(byModel(usage({ total_cost: 0, total_tokens: 0, cost_by_model: {}, tokens_by_model: {} })), []);
  assert.equal(byModel(usage({ total_cost: 0.5, total_tokens: 0, cost_by_model: {}, tokens_by_model: {} })).map((r) => [r.label, r.cost]), [["(no model)", 0.5]]);
});

test("events without a model have one name on every screen: analytics' \"unknown\" reads as the user pages' row", () => {
  assert.equal([modelLabel("unknown"), modelLabel(null), modelLabel(""), modelLabel("gpt-4.1")], ["(no model)", "(no model)", "(no model)", "gpt-4.1"]);
});

test.run();
