// Prepaid credits as the library keeps them (src/credits.ts over rules/credits.ts): the view's
// cap with the balance as the user's period cap, the local balance that spend past the
// allowance lowers, views merged in, the callbacks' crossings and expiries. The stack's side:
// credits-stack.test.ts.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { evaluate } from "../src/gates.ts";
import { applyView, rollLocally } from "../src/session-view.ts";
import { UserEntry } from "../src/state.ts";
import type { SessionView } from "../src/types.ts";

const t = suite("sdk: prepaid credits in the library's state");
const NOW = Date.parse("2026-11-15T00:00:00Z");

/** A pure-prepaid plan (allowance 0) or an allowance plus credits; `cap` is the total_spend dimension's max (allowance + drawn + balance). */
function view(o: { allowance?: number; balance: number; cap?: number; spend?: number; lowAt?: number | null; expiries?: { grant_id: string; at: string; remaining: number }[]; enabled?: boolean }): SessionView {
  const allowance = o.allowance ?? 0;
  const enabled = o.enabled ?? true;
  return {
    user_id: "u", service_user_id: "s1", plan: "prepaid", sdk_enabled: true,
    plan_config: {
      max_spend_per_period: allowance, soft_gate_at: 0.8, hard_gate_at: 1, model_limits: {}, cost_rates: {}, session_timeout_minutes: 30,
      tool_costs: {}, default_tool_cost: 0, pre_call_estimate: false, pre_call_buffer_tokens: 0, credits_enabled: enabled, credits_low_at: o.lowAt ?? null,
    },
    current_usage: { period_cost: o.spend ?? 0, period_tokens_total: 0, period_tokens_by_model: {}, period_cost_by_model: {} },
    billing_period: { start: "2026-11-01T00:00:00.000Z", end: "2026-12-01T00:00:00.000Z" },
    limits: [{ reason: "total_spend", name: null, metric: "spend", window: "period", duration_minutes: null, model: null, scope: "user", max: o.cap ?? allowance + o.balance, used: o.spend ?? 0, pct: 0, soft_gate_at: 0.8, hard_gate_at: 1, window_start: "2026-11-01T00:00:00.000Z", resets_at: "2026-12-01T00:00:00.000Z", credits: enabled ? { balance: o.balance, low_at: o.lowAt ?? null } : null }],
    credits: enabled ? { balance: o.balance, pending: 0, low_at: o.lowAt ?? null, expiries: o.expiries ?? [] } : null,
  };
}

const use = (periodCost: number) => ({ periodCost, sessionCost: 0, model: null, modelTokens: 0, estimateCost: 0, estimateTokens: 0, periodEnd: null, sessionEnd: null, counters: [] });

function spend(e: UserEntry, cost: number): void {
  e.count(e.sessions.at(undefined, NOW, e.timeoutMs), null, 0, cost, NOW);
}

t("the view's cap with the balance is the period cap; spend past the allowance lowers the balance; low once per crossing, then depleted", () => {
  const e = new UserEntry("u", NOW);
  applyView(e, view({ balance: 1, lowAt: 0.5 }), NOW);
  assert.is(e.config!.max_spend_per_period, 1);
  assert.equal(e.creditNews(NOW), []);
  spend(e, 0.4);
  assert.equal(e.creditNews(NOW), []);
  spend(e, 0.2);
  assert.equal(e.creditNews(NOW), [{ kind: "low", event: { userId: "u", balance: 0.4, lowAt: 0.5 } }]);
  spend(e, 0.1);
  assert.equal(e.creditNews(NOW), [], "once per crossing");
  assert.is(evaluate(e.config, use(e.periodCost)).status, "ok");
  spend(e, 0.3);
  assert.equal(e.creditNews(NOW), [{ kind: "depleted", event: { userId: "u", balance: 0, lowAt: 0.5 } }]);
  const r = evaluate(e.config, use(e.periodCost));
  assert.is(r.status, "hard_gate");
  assert.is(r.gate_reason, "total_spend");
  assert.equal(e.credits!.block(r.gate_reason, r.status, r.current_value, e.periodCost), { balance: 0, low_at: 0.5 });
  assert.equal(e.snapshot(NOW).credits, { balance: 0, pending: 0, low_at: 0.5 });
});

t("a newer view of the same cap: the lower balance wins; a grant (another cap) lifts it and arms the low mark again", () => {
  const e = new UserEntry("u", NOW);
  applyView(e, view({ allowance: 10, balance: 5, lowAt: 2 }), NOW);
  spend(e, 12);
  e.creditNews(NOW);
  // The service has not counted all of it yet: it still reports more balance and less spend.
  applyView(e, view({ allowance: 10, balance: 4, cap: 15, spend: 11, lowAt: 2 }), NOW);
  assert.is(e.credits!.balance(e.periodCost), 3);
  spend(e, 1.5); // 1.5 left: below the mark
  assert.equal(e.creditNews(NOW).map((n) => n.kind), ["low"]);
  // A $10 grant: the cap moves by it (drawn 3.5 + balance 11.5 = 15 + 10).
  applyView(e, view({ allowance: 10, balance: 11.5, cap: 25, spend: 13.5, lowAt: 2 }), NOW);
  assert.is(e.config!.max_spend_per_period, 25);
  assert.equal(e.creditNews(NOW), [], "lifted: nothing fires");
  spend(e, 10);
  assert.equal(e.creditNews(NOW).map((n) => [n.kind, n.event.balance]), [["low", 1.5]], "armed again by the grant");
  // Spend within the allowance draws nothing.
  const f = new UserEntry("f", NOW);
  applyView(f, view({ allowance: 10, balance: 5 }), NOW);
  spend(f, 9);
  assert.is(f.credits!.balance(f.periodCost), 5);
  const r = evaluate(f.config, { ...use(9), estimateCost: 0 });
  assert.is(f.credits!.block(r.gate_reason, r.status, r.current_value, f.periodCost), null);
});

t("a grant's expiry from the view: fires at its time with what it had left, and lowers the cap by it", () => {
  const e = new UserEntry("u", NOW);
  const at = NOW + 60_000;
  applyView(e, view({ balance: 3, lowAt: 1, expiries: [{ grant_id: "promo", at: new Date(at).toISOString(), remaining: 2 }, { grant_id: "gone", at: new Date(NOW - 1).toISOString(), remaining: 9 }] }), NOW);
  assert.is(e.credits!.nextExpiry, at, "an expiry already past when the view was read is out of its balance");
  assert.equal(e.creditNews(at - 1), []);
  assert.equal(e.creditNews(at), [
    { kind: "expired", event: { userId: "u", balance: 1, lowAt: 1, grantId: "promo", amount: 2 } },
  ]);
  assert.is(e.config!.max_spend_per_period, 1);
  assert.is(e.takeRecheck(), true, "the view is read again for the service's figure");
  assert.equal(e.creditNews(at + 1), [], "once");
  // Spent down before it expired: only what the balance still holds leaves.
  const f = new UserEntry("f", NOW);
  applyView(f, view({ balance: 3, expiries: [{ grant_id: "promo", at: new Date(at).toISOString(), remaining: 2 }] }), NOW);
  spend(f, 2.5);
  assert.equal(f.creditNews(at).map((n) => [n.kind, n.event.amount, n.event.balance]), [["expired", 0.5, 0], ["depleted", undefined, 0]]);
});

t("credits disabled, or no allowance: the plan's cap as it is, no credits", () => {
  const e = new UserEntry("u", NOW);
  applyView(e, view({ allowance: 10, balance: 5, enabled: false }), NOW);
  assert.is(e.config!.max_spend_per_period, 10);
  assert.is(e.credits, null);
  assert.equal(e.creditNews(NOW), []);
  assert.is(e.snapshot(NOW).credits, null);
});

t("the period ended with no answer: the next cap is the allowance plus the balance carried over", () => {
  const e = new UserEntry("u", NOW);
  applyView(e, view({ allowance: 1, balance: 2, lowAt: 0.5 }), NOW);
  spend(e, 1.5);
  rollLocally(e, Date.parse("2026-12-02T00:00:00Z"));
  assert.is(e.periodCost, 0);
  assert.is(e.config!.max_spend_per_period, 2.5);
  assert.is(e.credits!.balance(0), 1.5);
});

t.run();
