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
});

test("a window whose period_end passes without a newer subscription rolls on by its own length", () => {
  const a = sub("a", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z");
  // The end is exclusive: at period_end the next 31-day window begins, under the same plan.
  const next = periodAt([a], d("2026-02-01T00:00:00Z"));
  assert.equal([next.start, next.end, next.subscription?.planId, next.calendar], [d("2026-02-01T00:00:00Z"), d("2026-03-04T00:00:00Z"), "a", false]);
  const third = periodAt([a], d("2026-03-10T00:00:00Z"));
  assert.equal([third.start, third.end], [d("2026-03-04T00:00:00Z"), d("2026-04-04T00:00:00Z")]);
  // A renewal recorded late has the dates it was sent with; the start (the counter) is the same.
  const renewal = sub("a", "2026-02-03T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z");
  const late = periodAt([a, renewal], d("2026-02-02T00:00:00Z"));
  assert.equal([late.start, late.end], [d("2026-02-01T00:00:00Z"), d("2026-03-01T00:00:00Z")]);
  // A later subscription starting inside the rolled window ends it there.
  const future = sub("b", "2026-01-20T00:00:00Z", "2026-02-20T00:00:00Z", "2026-03-20T00:00:00Z");
  assert.equal(periodAt([a, future], d("2026-02-10T00:00:00Z")).end, d("2026-02-20T00:00:00Z"));
  assert.is(periodAt([a, future], d("2026-02-21T00:00:00Z")).subscription?.planId, "b");
  // A newer subscription without dates replaces the rolling: calendar months under its plan.
  const free = sub("free", "2026-02-10T00:00:00Z");
  const lapsed = periodAt([a, free], d("2026-02-15T00:00:00Z"));
  assert.equal([lapsed.calendar, lapsed.subscription?.planId], [true, "free"]);
  assert.equal(periodAt([a, free], d("2026-02-05T00:00:00Z")).subscription?.planId, "a");
});

test("the latest subscription whose dates hold the time decides, even one recorded after the event", () => {
  const a = sub("a", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z");
  const same = sub("b", "2026-01-15T00:00:00Z", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z");
  // Same dates: one period, now under the new plan throughout.
  const before = periodAt([a, same], d("2026-01-10T00:00:00Z"));
  const after = periodAt([a, same], d("2026-01-20T00:00:00Z"));
  assert.equal([before.start, before.end], [after.start, after.end]);
  assert.equal([before.subscription?.planId, after.subscription?.planId], ["b", "b"]);
  // Fresh dates: an event stamped inside them counts in the new period although the change
  // was recorded a moment later.
  const fresh = sub("c", "2026-01-15T12:00:05Z", "2026-01-15T12:00:00Z", "2026-02-15T12:00:00Z");
  assert.equal(periodAt([a, fresh], d("2026-01-15T11:59:59Z")).start, a.periodStart);
  const early = periodAt([a, fresh], d("2026-01-15T12:00:01Z"));
  assert.equal([early.start, early.subscription?.planId], [fresh.periodStart, "c"]);
});

test("a plan without dates set mid-window keeps the running window under the new plan", () => {
  const a = sub("a", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z");
  const free = sub("free", "2026-01-15T00:00:00Z");
  const p = periodAt([a, free], d("2026-01-20T00:00:00Z"));
  assert.equal([p.start, p.end, p.subscription?.planId], [a.periodStart, a.periodEnd, "free"]);
  assert.is(periodAt([a, free], d("2026-01-10T00:00:00Z")).subscription?.planId, "a");
});

test("the history's order decides which is latest, as the plans service records it, not the clocks", () => {
  // Two changes recorded by replicas whose clocks disagree: the later position wins.
  const a = sub("a", "2026-01-15T00:00:01Z", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z");
  const b = sub("b", "2026-01-15T00:00:00Z", "2026-01-10T00:00:00Z", "2026-02-10T00:00:00Z");
  assert.is(periodAt([a, b], d("2026-01-20T00:00:00Z")).subscription?.planId, "b");
  assert.is(periodAt([b, a], d("2026-01-20T00:00:00Z")).subscription?.planId, "a");
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
