import { test } from "uvu";
import * as assert from "uvu/assert";
import { gateCredits } from "./gate-credits.ts";

test("a hard gate's credits are read from its metadata as amounts kept to the nano-dollar; anything else is not taken", () => {
  assert.equal(gateCredits("hard_gate", { credits: { balance: 0.1 + 0.2, low_at: 5 } }), { balance: 0.3, low_at: 5 });
  assert.equal(gateCredits("hard_gate", { credits: { balance: 0.0000000004, low_at: 0.30000000000000004 } }), { balance: 0, low_at: 0.3 });
  assert.equal(gateCredits("hard_gate", { credits: { balance: -2.5 } }), { balance: -2.5, low_at: null });
  assert.is(gateCredits("soft_gate", { credits: { balance: 1 } }), undefined);
  assert.is(gateCredits("hard_gate", { credits: { balance: "1" } }), undefined);
  assert.is(gateCredits("hard_gate", { credits: [1] }), undefined);
  assert.is(gateCredits("hard_gate", undefined), undefined);
});

test.run();
