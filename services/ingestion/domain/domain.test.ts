// The cost, period and threshold rules are tested by the table of cases of the rules module
// (rules/cases.json); what is ingestion's own stays here.
import { test } from "uvu";
import * as assert from "uvu/assert";
import { applyCounterBounds, MAX_COUNTER_MODELS, MAX_COUNTER_TOKENS, OTHER_MODELS, undecided, type CounterState } from "./counter-bounds.ts";
import { decodeKey, decodeKeys, encodeGrantKey, encodeKey } from "./field-keys.ts";

test("model names survive as field names", () => {
  for (const name of ["gpt-4.1", "$weird", "a%2Eb", "claude-3.5-sonnet", "plain", "x\u0000y", "%00\u0000"]) {
    assert.is(decodeKey(encodeKey(name)), name);
    assert.not.ok(encodeKey(name).includes("."));
    assert.not.ok(encodeKey(name).startsWith("$"));
    assert.not.ok(encodeKey(name).includes("\u0000"), "the driver refuses a field name holding NUL");
  }
  assert.equal(decodeKeys({ [encodeKey("gpt-4.1")]: 3 }), { "gpt-4.1": 3 });
});

test("a name with white space at an end is stored without it at either end, as the embedded database needs, and read back exactly", () => {
  // Go's unicode.IsSpace, which FerretDB's path check trims with.
  const goSpace = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$/;
  for (const name of [" gpt-4o", "gpt-4o ", "\f", " ", "\u0085x\u3000", "a b", "%u0020", " %u0020 ", "pay_1\u00a0"]) {
    const key = encodeKey(name);
    assert.is(decodeKey(key), name, JSON.stringify(name));
    assert.not.ok(goSpace.test(key), `${JSON.stringify(key)} has white space at an end`);
  }
  assert.is(encodeKey("a b"), "a b", "inside a name white space stays as it was stored before");
});

test("grant ids keep the escapes they were stored with (accounts on MongoDB may hold one with white space at an end)", () => {
  assert.is(encodeGrantKey(" pay.1 "), " pay%2E1 ");
  assert.is(decodeKey(encodeGrantKey("a%b.$c")), "a%b.$c");
});

test("a model stored under its bare name before edge white space was escaped, and escaped since, reads as one", () => {
  assert.equal(decodeKeys({ " gpt": 2, [encodeKey(" gpt")]: 3, other: 1 }), { " gpt": 5, other: 1 });
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

test("counter bounds: a state read lately decides a batch unless it lacks a counter, a model an uncapped event names, or room below half the bound", () => {
  const ev = (model: string | null, total: number, counters: string[], capped = false) => ({ model, total_tokens: total, counters, capped });
  const known = new Map<string, CounterState>([
    ["a", { tokens: 100, models: new Set([encodeKey("gpt.4"), "x"]) }],
    ["b", { tokens: MAX_COUNTER_TOKENS / 2 - 30, models: new Set(["x"]) }],
    ["c", { tokens: 0, models: new Set() }],
  ]);
  assert.equal([...undecided([ev("gpt.4", 10, ["a"]), ev(null, 5, ["a"]), ev("x", 1, ["a"])], known)], [], "models held, far below the bound");
  assert.equal([...undecided([ev("y", 1, ["a"])], known)], ["a"], "a model the state lacks");
  assert.equal([...undecided([ev("y", 1, ["c"], true)], known)], [], "a capped model never folds: the state decides");
  assert.equal([...undecided([ev("x", 20, ["b"]), ev("x", 10, ["b"])], known)], [], "up to half the bound exactly");
  assert.equal([...undecided([ev("x", 20, ["b"]), ev("x", 11, ["b"])], known)], ["b"], "past half the bound, with the batch's own tokens");
  assert.equal([...undecided([ev("x", 1, ["a", "month"])], known)].sort(), ["month"], "a counter not known");
});

test.run();
