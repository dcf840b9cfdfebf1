// The cost, period and threshold rules are tested by the table of cases of the rules module
// (rules/cases.json); what is ingestion's own stays here.
import { test } from "uvu";
import * as assert from "uvu/assert";
import { applyCounterBounds, MAX_COUNTER_MODELS, MAX_COUNTER_TOKENS, OTHER_MODELS, type CounterState } from "./counter-bounds.ts";
import { decodeKey, decodeKeys, encodeKey } from "./field-keys.ts";

test("model names survive as field names", () => {
  for (const name of ["gpt-4.1", "$weird", "a%2Eb", "claude-3.5-sonnet", "plain", "x\u0000y", "%00\u0000"]) {
    assert.is(decodeKey(encodeKey(name)), name);
    assert.not.ok(encodeKey(name).includes("."));
    assert.not.ok(encodeKey(name).startsWith("$"));
    assert.not.ok(encodeKey(name).includes("\u0000"), "the driver refuses a field name holding NUL");
  }
  assert.equal(decodeKeys({ [encodeKey("gpt-4.1")]: 3 }), { "gpt-4.1": 3 });
});

test("counter bounds: models past the bound fold unless capped; tokens past the bound refuse, each counter of an event", () => {
  const full = new Set(Array.from({ length: MAX_COUNTER_MODELS }, (_, i) => `m${i}`));
  const state = new Map<string, CounterState>([
    ["period", { tokens: 0, models: full }],
    ["month", { tokens: MAX_COUNTER_TOKENS - 100, models: new Set() }],
  ]);
  const ev = (model: string | null, total: number, counters: string[], capped = false) => ({ model, total_tokens: total, counters, capped });
  const known = ev("m3", 10, ["period"]);
  const fresh = ev("new.one", 10, ["period"]);
  const capped = ev("capped", 10, ["period"], true);
  const fits = ev("x", 100, ["period", "month"]);
  const over = ev("y", 1, ["month"]);
  const newcomer = ev("z", 1, ["fresh-counter"]);
  const { folded, refused } = applyCounterBounds([known, fresh, capped, fits, over, newcomer], state);
  assert.equal(folded, [fresh, fits], "a new model folds once any of its counters is full");
  assert.equal(refused, [{ event: over, tokens: MAX_COUNTER_TOKENS }], "the month counter reached its bound with the event before");
  assert.ok(state.get("period")!.models.has(OTHER_MODELS));
  assert.ok(state.get("period")!.models.has("capped"));
  assert.ok(!state.get("period")!.models.has(encodeKey("new.one")));
  assert.equal([...state.get("fresh-counter")!.models], ["z"]);
});

test.run();
