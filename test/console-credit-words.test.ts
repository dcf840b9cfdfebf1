// The console's words and sums for prepaid credits (console/src/credits.ts, format.ts): money to
// the nano-dollar, the grant form's body, what the period spend bar's max is made of.
import { test } from "uvu";
import * as assert from "uvu/assert";
import { capParts, capSentence, creditCapNote, drawsCredits, grantBody, newGrantForm, voidable } from "../console/src/credits.ts";
import { fmtExactMoney, fmtSignedMoney } from "../console/src/format.ts";

test("credits are shown to the nano-dollar, never rounded to a cent", () => {
  assert.is(fmtExactMoney(5), "$5.00");
  assert.is(fmtExactMoney(4.499876543), "$4.499876543");
  // One format for every amount: a spend of $9.99995 is not the "$10.00" of its cap.
  assert.is(fmtExactMoney(9.99995), "$9.99995");
  assert.is(fmtExactMoney(0.1 + 0.2), "$0.30", "a float's noise below the nano-dollar is not shown");
  assert.is(fmtExactMoney(1_000_000_000), "$1,000,000,000.00");
  assert.is(fmtExactMoney(-0.000000001), "-$0.000000001");
  assert.is(fmtExactMoney(null), "—");
  assert.is(fmtSignedMoney(5), "+$5.00");
  assert.is(fmtSignedMoney(-0.25), "-$0.25");
  assert.is(fmtSignedMoney(0), "$0.00");
});

test("the grant form's body: numbers as typed, text the API is to refuse as is, defaults left to the API", () => {
  const f = { ...newGrantForm("pay_1"), amount: "5", description: "  " };
  assert.equal(grantBody(f), { id: "pay_1", amount: 5, kind: "paid", priority: 50, expires_at: null, description: null });
  assert.equal(grantBody({ ...f, amount: "five", priority: "high" }).amount, "five");
  assert.equal(grantBody({ ...f, amount: "five", priority: "high" }).priority, "high");
  assert.is(grantBody({ ...f, priority: "" }).priority, 50);
  const local = "2030-01-02T03:04";
  const body = grantBody({ ...f, kind: "promotional", priority: "10", effective_at: local, expires_at: "2030-02-01T00:00", description: "welcome" });
  assert.equal(body, { id: "pay_1", amount: 5, kind: "promotional", priority: 10, effective_at: new Date(local).toISOString(), expires_at: new Date("2030-02-01T00:00").toISOString(), description: "welcome" });
  assert.is(grantBody({ ...f, id: " pay_2 " }).id, "pay_2");
});

test("the period spend cap with credits: allowance, the balance, and what the period spent past the allowance", () => {
  assert.equal(capParts(16, 10, 3), { allowance: 10, balance: 3, past: 3 });
  // Sums of floats land on the nano-dollar, not beside it.
  assert.equal(capParts(10.3, 10, 0.1), { allowance: 10, balance: 0.1, past: 0.2 });
  // Pure prepaid (allowance 0) before any draw.
  assert.equal(capParts(5, 0, 5), { allowance: 0, balance: 5, past: 0 });
  // An overdraft: the balance is negative, the draw covered it.
  assert.equal(capParts(1, 0, -0.25), { allowance: 0, balance: -0.25, past: 1.25 });
  // $5 spent on a plan without credits, then a prepaid one: not drawn, but past the allowance.
  assert.equal(capParts(25, 0, 20), { allowance: 0, balance: 20, past: 5 });
  assert.is(capSentence(6, 1, 4.5), "Max includes credits: $1.00 allowance + $4.50 balance + $0.50 spent past the allowance this period.");
  assert.is(capSentence(5, 0, 5), "Max includes credits: $0.00 allowance + $5.00 balance.");
});

test("a member's own cap and its team's: each sentence names its own parts", () => {
  const credits = (balance: number) => ({ balance, low_at: null });
  // The team: $10 allowance, $1.25 drawn (or paid by members), $1.75 left in its pool; $4 spent.
  const team = { reason: "team:total_spend", max: 13, used: 4, credits: credits(1.75) };
  // The member: $0.50 allowance, $2 of its own, plus what the team can still spend ($9).
  const own = { reason: "total_spend", max: 11.5, used: 0, credits: credits(2) };
  const allowance = { own: 0.5, team: 10 };
  assert.is(creditCapNote(own, [own, team], allowance), "Max includes credits: $0.50 allowance + $2.00 balance + $9.00 the team can still spend (its allowance left and its pool's balance).");
  assert.is(creditCapNote(team, [own, team], allowance), "Max includes the team's credits: $10.00 team allowance + $3.00 credits (pool balance $1.75; $1.25 drawn from the pool this period or paid by members' own allowances and credits).");
  // Not in a team: the sentence as before; without credits or a cap, none.
  assert.is(creditCapNote({ ...own, max: 2.5 }, [own], allowance), capSentence(2.5, 0.5, 2));
  assert.is(creditCapNote({ ...own, credits: null }, [own], allowance), undefined);
  assert.is(creditCapNote({ reason: "limit:daily", max: 1, used: 0, credits: credits(1) }, [], allowance), undefined);
  // A team whose pool is spent: nothing added.
  assert.is(creditCapNote({ ...own, max: 2.5 }, [own, { ...team, used: 13 }], allowance), capSentence(2.5, 0.5, 2));
});

test("a plan draws credits only with credits_enabled and a period cap", () => {
  assert.is(drawsCredits(null), "no plan");
  assert.is(drawsCredits({ credits_enabled: false, max_spend_per_period: 5 }), false);
  assert.is(drawsCredits({ credits_enabled: true }), "no cap");
  assert.is(drawsCredits({ credits_enabled: true, max_spend_per_period: null }), "no cap");
  assert.is(drawsCredits({ credits_enabled: true, max_spend_per_period: 0 }), true);
});

test("only grants with money still to draw can be voided", () => {
  assert.equal(["pending", "active", "depleted", "expired", "voided"].filter(voidable), ["pending", "active"]);
});

test.run();
