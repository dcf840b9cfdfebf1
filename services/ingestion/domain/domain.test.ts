// The cost, period and threshold rules are tested by the table of cases of the rules module
// (sdk/typescript/test/rules.json); what is ingestion's own stays here.
import { test } from "uvu";
import * as assert from "uvu/assert";
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

test.run();
