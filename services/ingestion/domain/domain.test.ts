import { test } from "uvu";
import * as assert from "uvu/assert";
import { manualCost, normalizeModel, tokenCost, type Pricing } from "./cost.ts";
import { decodeKey, decodeKeys, encodeKey } from "./field-keys.ts";
import { calendarMonth, parseUsagePeriod, periodAt, type SubscriptionWindow } from "./period.ts";
import { reachedThresholds } from "./thresholds.ts";

const d = (s: string) => new Date(s);
const sub = (planId: string, effectiveAt: string, start?: string, end?: string): SubscriptionWindow => ({
  planId,
  planName: planId,
  effectiveAt: d(effectiveAt),
  periodStart: start ? d(start) : undefined,
  periodEnd: end ? d(end) : undefined,
});

test("no subscription: the calendar month (UTC) without a plan", () => {
  const p = periodAt([], d("2026-02-28T23:59:59Z"));
  assert.equal([p.start, p.end], [d("2026-02-01T00:00:00Z"), d("2026-03-01T00:00:00Z")]);
  assert.is(p.subscription, null);
  assert.ok(p.calendar);
  assert.equal(calendarMonth(d("2026-12-31T12:00:00Z")).end, d("2027-01-01T00:00:00Z"));
});

test("the window of the subscription in force", () => {
  const a = sub("a", "2026-01-05T00:00:00Z", "2026-01-05T00:00:00Z", "2026-02-05T00:00:00Z");
  const p = periodAt([a], d("2026-01-20T00:00:00Z"));
  assert.equal([p.start, p.end, p.subscription?.planId], [a.periodStart, a.periodEnd, "a"]);
  // The end is exclusive: the instant period_end falls outside (calendar month, plan still a).
  const after = periodAt([a], d("2026-02-05T00:00:00Z"));
  assert.ok(after.calendar);
  assert.is(after.subscription?.planId, "a");
});

test("a plan change with the same dates keeps the period; fresh dates start a new one", () => {
  const a = sub("a", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z");
  const same = sub("b", "2026-01-15T00:00:00Z", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z");
  const before = periodAt([a, same], d("2026-01-10T00:00:00Z"));
  const after = periodAt([a, same], d("2026-01-20T00:00:00Z"));
  assert.equal([before.start, before.end], [after.start, after.end]);
  assert.equal([before.subscription?.planId, after.subscription?.planId], ["a", "b"]);

  const fresh = sub("c", "2026-01-15T00:00:00Z", "2026-01-15T00:00:00Z", "2026-02-15T00:00:00Z");
  const old = periodAt([a, fresh], d("2026-01-14T23:00:00Z"));
  const now = periodAt([a, fresh], d("2026-01-16T00:00:00Z"));
  assert.equal(old.start, a.periodStart);
  assert.equal(now.start, fresh.periodStart);
  assert.is(now.subscription?.planId, "c");
});

test("an event stamped just before its subscription was recorded uses that window", () => {
  const a = sub("a", "2026-01-10T00:00:05Z", "2026-01-10T00:00:00Z", "2026-02-10T00:00:00Z");
  const p = periodAt([a], d("2026-01-10T00:00:01Z"));
  assert.equal(p.start, a.periodStart);
  assert.not.ok(p.calendar);
});

test("a plan without dates set mid-window keeps the running window under the new plan", () => {
  const a = sub("a", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z");
  const free = sub("free", "2026-01-15T00:00:00Z");
  const p = periodAt([a, free], d("2026-01-20T00:00:00Z"));
  assert.equal([p.start, p.end, p.subscription?.planId], [a.periodStart, a.periodEnd, "free"]);
});

test("history order does not matter", () => {
  const a = sub("a", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z");
  const b = sub("b", "2026-01-15T00:00:00Z", "2026-01-15T00:00:00Z", "2026-02-15T00:00:00Z");
  assert.is(periodAt([b, a], d("2026-01-20T00:00:00Z")).subscription?.planId, "b");
});

test("an unlimited plan without dates uses the calendar month under that plan", () => {
  const p = periodAt([sub("free", "2026-01-01T00:00:00Z")], d("2026-03-10T00:00:00Z"));
  assert.ok(p.calendar);
  assert.is(p.subscription?.planId, "free");
  assert.equal(p.start, d("2026-03-01T00:00:00Z"));
});

test("usage periods: current_period, current_month and YYYY-MM only", () => {
  const now = d("2026-07-04T10:00:00Z");
  assert.equal(parseUsagePeriod("current_period", now), { kind: "current_period" });
  assert.equal(parseUsagePeriod("current_month", now), { kind: "month", start: d("2026-07-01T00:00:00Z"), end: d("2026-08-01T00:00:00Z") });
  assert.equal(parseUsagePeriod("2025-12", now), { kind: "month", start: d("2025-12-01T00:00:00Z"), end: d("2026-01-01T00:00:00Z") });
  for (const bad of ["2025-13", "2025-00", "2025-1", "25-01", "last_month", "2025-01-01", " 2025-01"]) {
    assert.is(parseUsagePeriod(bad, now), null, bad);
  }
});

const pricing: Pricing = {
  costRates: { "gpt-4o": { input: 2.5, output: 10 }, "gpt-4o-mini": { input: 0.15, output: 0.6 }, "claude.3": { input: 1, output: 2 } },
  modelLimits: { "o1": {} },
  defaultCostRate: { input: 1, output: 1 },
  toolCosts: { search: 0.05 },
  defaultToolCost: 0.02,
};

test("model names: longest prefix over cost_rates and model_limits keys, else unchanged", () => {
  assert.is(normalizeModel("gpt-4o-2024-08-06", pricing), "gpt-4o");
  assert.is(normalizeModel("gpt-4o-mini-2024-07-18", pricing), "gpt-4o-mini");
  assert.is(normalizeModel("o1-preview", pricing), "o1");
  assert.is(normalizeModel("llama-3", pricing), "llama-3");
  assert.is(normalizeModel("gpt-4o", null), "gpt-4o");
});

test("manual cost: explicit, priced, default rate, tools, audit entry", () => {
  assert.is(tokenCost(2000, 500, { input: 2.5, output: 10 }), 10);
  const explicit = manualCost({ cost: 1.23, model: "gpt-4o-x", inputTokens: 1e6, outputTokens: 0, toolCalls: ["search"] }, pricing);
  assert.equal(explicit, { model: "gpt-4o", costTokens: 1.23, costTools: 0, costTotal: 1.23 });
  const priced = manualCost({ model: "gpt-4o-2024", inputTokens: 2000, outputTokens: 500, toolCalls: ["search", "other"] }, pricing);
  assert.is(priced.model, "gpt-4o");
  assert.is(priced.costTokens, 10);
  assert.ok(Math.abs(priced.costTools - 0.07) < 1e-12);
  const fallback = manualCost({ model: "llama", inputTokens: 1000, outputTokens: 1000, toolCalls: [] }, pricing);
  assert.is(fallback.costTotal, 2);
  const noDefault = manualCost({ model: "llama", inputTokens: 1000, outputTokens: 1000, toolCalls: [] }, { ...pricing, defaultCostRate: undefined });
  assert.is(noDefault.costTotal, 0);
  assert.equal(manualCost({ inputTokens: 0, outputTokens: 0, toolCalls: [] }, null), { model: null, costTokens: 0, costTools: 0, costTotal: 0 });
  assert.is(manualCost({ model: "gpt-4o", inputTokens: 5000, outputTokens: 0, toolCalls: ["x"] }, null).costTotal, 0);
});

test("thresholds: 50/80/100 of a finite positive limit", () => {
  assert.equal(reachedThresholds(4.99, 10), []);
  assert.equal(reachedThresholds(5, 10), [50]);
  assert.equal(reachedThresholds(0.1 + 0.2 + 0.2 + 0.3, 1), [50, 80]);
  assert.equal(reachedThresholds(25, 10), [50, 80, 100]);
  assert.equal(reachedThresholds(25, undefined), []);
  assert.equal(reachedThresholds(25, 0), []);
});

test("model names survive as field names", () => {
  for (const name of ["gpt-4.1", "$weird", "a%2Eb", "claude-3.5-sonnet", "plain"]) {
    assert.is(decodeKey(encodeKey(name)), name);
    assert.not.ok(encodeKey(name).includes("."));
    assert.not.ok(encodeKey(name).startsWith("$"));
  }
  assert.equal(decodeKeys({ [encodeKey("gpt-4.1")]: 3 }), { "gpt-4.1": 3 });
});

test.run();
