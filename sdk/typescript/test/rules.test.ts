// The rules module against the one table of cases (rules/cases.json, also run by the Python client),
// then the library's own use of it: merging session views, rolling a period on, session windows.
import { readFileSync } from "node:fs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import * as rules from "../src/rules/index.ts";
import { applyView, rollLocally } from "../src/session-view.ts";
import { UserEntry } from "../src/state.ts";
import type { PlanConfig, SessionView } from "../src/types.ts";

type Expect = Record<string, unknown>;
interface PricingCase {
  name: string;
  model: string | null;
  input_tokens: number;
  output_tokens: number;
  tool_calls: string[];
  cost?: number;
  expect: Expect;
}
interface Sub {
  plan: string;
  effective_at: string;
  period_start?: string;
  period_end?: string;
}
const table = JSON.parse(readFileSync(new URL("../../../rules/cases.json", import.meta.url), "utf8")) as {
  pricing: { plan: rules.Pricing | null; cases: PricingCase[] }[];
  gates: { plan: rules.GatePlan; cases: { name: string; plan?: rules.GatePlan | null; usage: Record<string, number | string | null>; expect: Expect }[] };
  thresholds: { levels: number[]; cases: { spend: number; limit: number | null; expect: number[] }[] };
  event_bounds: { max_event_tokens: number; metadata_max_depth: number; external_ids: { id: string; ok: boolean }[] };
  money: { sums: { amount: number; times: number; expect: number }[]; nanos: { amount: number; expect: number }[]; ratios: { part: number; whole: number; expect: number }[] };
  plan_defaults: { plan: rules.PlanRules; no_plan: rules.PlanRules };
  roll_on: { name: string; start: string; end: string; at: string; expect: { start: string; end: string } }[];
  calendar_month: { at: string; expect: { start: string; end: string } }[];
  estimate_tokens: { cases: { name: string; prompt: unknown; expect: number }[] };
  period_at: { cases: { name: string; history: Sub[]; at: string; expect: Expect }[] };
  usage_period: { cases: { label: string; now: string; expect: Expect | null }[] };
  session_window: { cases: { name: string; since: string; at: string; session_timeout_minutes: number; expect: boolean }[] };
  windows: {
    calendar: { name: string; window: rules.CalendarWindow; time_zone: string; at: string; expect: { start: string; end: string } }[];
    rolling: { name: string; duration_minutes: number; hard_mark: number; now: string; buckets: { start: string; used: number }[]; expect: { used: number; resets_at: string | null } }[];
    dimension_key: { limit: Parameters<typeof rules.dimensionKey>[0]; expect: string }[];
  };
  dimensions: { cases: DimensionsCase[] };
  teams: { cases: TeamsCase[] };
  credits: {
    plan: Omit<rules.GatePlan, "max_spend_per_period">;
    cases: CreditsCase[];
    crossings: { name: string; before: number; after: number; low_at: number | null; armed: boolean; expect: Expect }[];
  };
};
interface CreditsCase {
  name: string;
  allowance: number | null;
  plan?: Omit<rules.GatePlan, "max_spend_per_period">;
  credits: { drawn: number; balance: number; low_at: number | null } | null;
  usage: { period_cost: number; estimate_cost: number };
  expect: Expect;
}
interface DimensionsCase {
  name: string;
  plan: rules.WindowPlan & { time_zone: string; limits: rules.PlanLimit[] };
  now: string;
  billing_period: { start: string; end: string };
  session_end: string | null;
  usage: {
    period_cost: number;
    session_cost: number;
    model_tokens: number;
    limits: ({ window_start: string; used: number } | { buckets: { start: string; used: number }[] })[];
    held?: number[];
  };
  call: { model: string | null; estimate_cost: number; estimate_tokens: number };
  expect: Expect;
}

type Usage = DimensionsCase["usage"];
interface TeamsCase extends Omit<DimensionsCase, "plan"> {
  plan: DimensionsCase["plan"] | null;
  team: { plan: DimensionsCase["plan"]; billing_period: { start: string; end: string }; usage: Omit<Usage, "session_cost"> } | null;
}

/** Only the keys a case expects are checked; numbers exactly (money is exact at the nano-dollar). */
function matches(actual: Record<string, unknown>, expect: Expect, what: string): void {
  for (const [k, want] of Object.entries(expect)) assert.equal(actual[k], want, `${what}: ${k}`);
}
const iso = (d: Date | number) => new Date(d).toISOString();

const t = suite("rules: the table of cases");

t("pricing: normalization, rates, tools, explicit costs, names of Object.prototype's members", () => {
  let n = 0;
  for (const group of table.pricing) {
    for (const c of group.cases) {
      matches({ ...rules.price(c.model, c.input_tokens, c.output_tokens, c.tool_calls, group.plan, c.cost) }, c.expect, c.name);
      n++;
    }
  }
  assert.ok(n >= 20, `${n} pricing cases`);
});

/** A gates case's usage as the guard reads it. */
const gateInput = (u: Record<string, number | string | null>): rules.GateInput => ({
  periodCost: u.period_cost as number,
  sessionCost: u.session_cost as number,
  model: u.model as string | null,
  modelTokens: u.model_tokens as number,
  estimateCost: u.estimate_cost as number,
  estimateTokens: u.estimate_tokens as number,
});

t("gates: every cap, soft and hard marks, estimates, messages", () => {
  for (const c of table.gates.cases) {
    const input = gateInput(c.usage);
    matches({ ...rules.evaluate(c.plan === undefined ? table.gates.plan : c.plan, input) }, c.expect, c.name);
  }
});

t("thresholds: the levels, and which a spend has reached", () => {
  assert.equal([...rules.THRESHOLDS], table.thresholds.levels);
  for (const c of table.thresholds.cases) assert.equal(rules.reachedThresholds(c.spend, c.limit), c.expect, `${c.spend} of ${c.limit}`);
  for (const c of table.thresholds.cases) assert.is(rules.hasThresholds(c.limit), c.limit !== null && c.limit > 0);
});

t("event bounds: what one event may carry, and the user ids refused beyond their length", () => {
  assert.is(rules.MAX_EVENT_TOKENS, table.event_bounds.max_event_tokens);
  assert.is(rules.METADATA_MAX_DEPTH, table.event_bounds.metadata_max_depth);
  for (const c of table.event_bounds.external_ids) assert.is(rules.externalIdProblem(c.id) === null, c.ok, JSON.stringify(c.id));
});

t("money: sums as whole nano-dollars converted once, ratios rounded to 1e-6", () => {
  for (const c of table.money.sums) {
    let nano = 0;
    for (let i = 0; i < c.times; i++) nano += rules.toNano(c.amount);
    assert.is(rules.toDollars(nano), c.expect, `${c.times} x ${c.amount}`);
  }
  for (const c of table.money.nanos) assert.is(rules.toNano(c.amount), c.expect, `${c.amount} in nano-dollars`);
  for (const c of table.money.ratios) assert.is(rules.ratio(rules.toNano(c.part), rules.toNano(c.whole)), c.expect, `${c.part} / ${c.whole}`);
});

t("plan defaults: a plan's unset fields, and a user without a plan", () => {
  assert.equal({ ...rules.PLAN_DEFAULTS }, table.plan_defaults.plan);
  assert.equal({ ...rules.NO_PLAN_CONFIG }, table.plan_defaults.no_plan);
});

t("periods: roll-on by the window's length, calendar months", () => {
  for (const c of table.roll_on) {
    const w = rules.rollOn(Date.parse(c.start), Date.parse(c.end), Date.parse(c.at));
    assert.equal({ start: iso(w.start), end: iso(w.end) }, c.expect, c.name);
  }
  for (const c of table.calendar_month) {
    const m = rules.calendarMonth(new Date(c.at));
    assert.equal({ start: iso(m.start), end: iso(m.end) }, c.expect, c.at);
  }
});

t("estimate_tokens: a prompt's text in UTF-16 code units, about four a token", () => {
  for (const c of table.estimate_tokens.cases) assert.is(rules.estimateTokens(c.prompt), c.expect, c.name);
});

t("periods: attribution over a subscription history", () => {
  const date = (s: string | undefined) => (s === undefined ? undefined : new Date(s));
  for (const c of table.period_at.cases) {
    const history = c.history.map((s) => ({
      planId: s.plan,
      planName: s.plan,
      effectiveAt: new Date(s.effective_at),
      periodStart: date(s.period_start),
      periodEnd: date(s.period_end),
    }));
    const p = rules.periodAt(history, new Date(c.at));
    matches({ start: iso(p.start), end: iso(p.end), plan: p.subscription?.planId ?? null, calendar: p.calendar }, c.expect, c.name);
  }
});

t("periods: the period of a usage query", () => {
  for (const c of table.usage_period.cases) {
    const p = rules.parseUsagePeriod(c.label, new Date(c.now));
    const got = p === null ? null : p.kind === "current_period" ? { kind: p.kind } : { kind: p.kind, start: iso(p.start), end: iso(p.end) };
    assert.equal(got, c.expect, JSON.stringify(c.label));
  }
});

t("sessions: when a window is over", () => {
  for (const c of table.session_window.cases) {
    const over = rules.windowOver(Date.parse(c.since), Date.parse(c.at), rules.sessionWindowMs(c.session_timeout_minutes));
    assert.is(over, c.expect, c.name);
  }
});

t("windows: calendar windows in a time zone", () => {
  for (const c of table.windows.calendar) {
    const w = rules.calendarWindow(c.window, Date.parse(c.at), c.time_zone);
    assert.equal({ start: iso(w.start), end: iso(w.end) }, c.expect, c.name);
  }
});

t("windows: rolling windows by buckets", () => {
  for (const c of table.windows.rolling) {
    const buckets = c.buckets.map((b) => ({ start: Date.parse(b.start), used: b.used }));
    const now = Date.parse(c.now);
    const resets = rules.rollingResetsAt(buckets, c.duration_minutes, c.hard_mark, now);
    assert.equal({ used: rules.rollingUsed(buckets, c.duration_minutes, now), resets_at: resets === null ? null : iso(resets) }, c.expect, c.name);
  }
  for (const c of table.windows.dimension_key) assert.is(rules.dimensionKey(c.limit), c.expect);
});

/** The counters of a case's plan limits as a client last saw them (the window of window_start, or the buckets), brought to now. */
function countersOf(plan: DimensionsCase["plan"], usage: Pick<Usage, "limits" | "held">, now: number, period: rules.Span): rules.LimitCounter[] {
  return plan.limits.map((l, i) => {
    const u = usage.limits[i]!;
    const counter = rules.newCounter(l, "window_start" in u ? Date.parse(u.window_start) : now, plan.time_zone, period);
    if ("window_start" in u) counter.used = rules.unitOf(l.metric, u.used);
    else counter.buckets = u.buckets.map((b) => ({ start: Date.parse(b.start), used: rules.unitOf(l.metric, b.used) }));
    counter.held = rules.unitOf(l.metric, usage.held?.[i] ?? 0);
    rules.advance(l, counter, now, plan.time_zone, period, rules.hardMarkOf(l, plan.hard_gate_at));
    return counter;
  });
}

function windowInput(c: Omit<DimensionsCase, "plan">, counters: rules.LimitCounter[]): rules.WindowInput {
  return {
    periodCost: c.usage.period_cost,
    sessionCost: c.usage.session_cost,
    model: c.call.model,
    modelTokens: c.usage.model_tokens,
    estimateCost: c.call.estimate_cost,
    estimateTokens: c.call.estimate_tokens,
    periodEnd: Date.parse(c.billing_period.end),
    sessionEnd: c.session_end === null ? null : Date.parse(c.session_end),
    counters,
  };
}

const spanOf = (p: { start: string; end: string }) => ({ start: Date.parse(p.start), end: Date.parse(p.end) });

t("dimensions: every window of a plan, requests, rolling expiry, model limits, limits of 0, gates per limit, which one blocks", () => {
  for (const c of table.dimensions.cases) {
    const now = Date.parse(c.now);
    const result = rules.evaluatePlan(c.plan, windowInput(c, countersOf(c.plan, c.usage, now, spanOf(c.billing_period))));
    matches({ ...result }, c.expect, c.name);
  }
  assert.ok(table.dimensions.cases.length >= 25);
});

t("teams: a member's own dimensions and the team plan's (team sums, the member's own for scope member) at once, team: reasons", () => {
  for (const c of table.teams.cases) {
    const now = Date.parse(c.now);
    const own = c.plan === null ? [] : countersOf(c.plan, c.usage, now, spanOf(c.billing_period));
    const tm = c.team;
    // One counter per team plan limit: the case gives the team's figure or the member's, by scope.
    const teamCounters = tm === null ? [] : countersOf(tm.plan, tm.usage, now, spanOf(tm.billing_period));
    const team: rules.TeamWindowInput | null =
      tm === null ? null : { plan: tm.plan, periodCost: tm.usage.period_cost, modelTokens: tm.usage.model_tokens, periodEnd: Date.parse(tm.billing_period.end), counters: teamCounters, memberCounters: teamCounters };
    matches({ ...rules.evaluatePlan(c.plan, windowInput(c, own), team) }, c.expect, c.name);
  }
  assert.ok(table.teams.cases.length >= 10);
});

t("dimensions: SPEC's caps alone give what gates gives, case for case", () => {
  for (const c of table.gates.cases) {
    const input = gateInput(c.usage);
    const plan = c.plan === undefined ? table.gates.plan : c.plan;
    const end = Date.parse("2026-12-01T00:00:00.000Z");
    const { resets_at, ...withWindows } = rules.evaluatePlan(plan === null ? null : { ...plan, time_zone: "UTC", limits: [] }, { ...input, periodEnd: end, sessionEnd: end, counters: [] });
    assert.equal(withWindows, rules.evaluate(plan, input), c.name);
    matches(withWindows, c.expect, c.name);
    // A cap of 0 never lifts by itself: no reset (nor Retry-After).
    const zero = c.expect.gate_reason === "total_spend" && plan?.max_spend_per_period === 0;
    assert.is(resets_at, withWindows.status === "ok" || zero ? null : "2026-12-01T00:00:00.000Z", c.name);
  }
});

t("credits: the period cap with a balance, the balance after spend, a block naming the credits, low and depleted crossings", () => {
  for (const c of table.credits.cases) {
    const cr = c.credits;
    const cap = cr === null ? c.allowance : rules.creditCap(c.allowance, cr.drawn, cr.balance);
    const result = rules.evaluate({ ...(c.plan ?? table.credits.plan), max_spend_per_period: cap }, {
      periodCost: c.usage.period_cost,
      sessionCost: 0,
      model: null,
      modelTokens: 0,
      estimateCost: c.usage.estimate_cost,
      estimateTokens: 0,
    });
    const balance = cr === null || cap === null || c.allowance === null ? null : rules.creditBalance(cap, c.allowance, c.usage.period_cost);
    const named = cr !== null && balance !== null && rules.blockedByCredits(result.gate_reason, result.status, result.current_value, c.allowance);
    matches({ ...result, cap, ...(balance === null ? {} : { balance }) }, { ...c.expect, credits: undefined }, c.name);
    assert.equal(named ? { balance, low_at: cr!.low_at } : null, c.expect.credits, `${c.name}: credits`);
    if (cr !== null && cap !== null && c.allowance !== null) assert.is(rules.creditsDrawn(cap, c.allowance, cr.balance), cr.drawn, `${c.name}: drawn read back`);
  }
  for (const c of table.credits.crossings) matches({ ...rules.creditCrossing(c.before, c.after, c.low_at, c.armed) }, c.expect, c.name);
  assert.ok(table.credits.cases.length >= 10 && table.credits.crossings.length >= 10);
});

t("windows: consecutive calendar windows tile time across daylight-saving changes", () => {
  for (const tz of ["UTC", "America/New_York", "Europe/Berlin", "America/Santiago", "Asia/Kolkata", "Australia/Lord_Howe"]) {
    for (const kind of rules.CALENDAR_WINDOWS) {
      let t0 = Date.parse("2026-01-01T00:00:00Z");
      const stop = Date.parse(kind === "minute" || kind === "hour" ? "2026-01-03T00:00:00Z" : "2027-01-01T00:00:00Z");
      let w = rules.calendarWindow(kind, t0, tz);
      while (w.end < stop) {
        assert.ok(w.start <= t0 && t0 < w.end, `${tz} ${kind} ${iso(t0)}`);
        const next = rules.calendarWindow(kind, w.end, tz);
        assert.is(next.start, w.end, `${tz} ${kind}: the window after ${iso(w.start)} starts where it ends`);
        assert.ok(rules.calendarWindow(kind, w.end - 1, tz).start === w.start, `${tz} ${kind}: the last ms of ${iso(w.start)}`);
        t0 = w.end;
        w = next;
      }
    }
  }
  assert.ok(rules.isTimeZone("Europe/Paris") && rules.isTimeZone("UTC"));
  assert.not.ok(rules.isTimeZone("Mars/Olympus") || rules.isTimeZone(""));
});

t.run();

const sdk = suite("sdk: the library's state over the rules");

const PLAN: PlanConfig = {
  max_spend_per_period: 10,
  max_spend_per_session: 2,
  soft_gate_at: 0.8,
  hard_gate_at: 1,
  model_limits: { m: { max_tokens_per_period: 1000 } },
  cost_rates: {},
  session_timeout_minutes: 30,
  default_cost_rate: null,
  tool_costs: {},
  default_tool_cost: 0.02,
  pre_call_estimate: false,
  pre_call_buffer_tokens: 4096,
  limits: [],
  time_zone: "UTC",
};

function view(over: Partial<SessionView> = {}, usage: Partial<SessionView["current_usage"]> = {}): SessionView {
  return {
    user_id: "u", service_user_id: "s1", plan: "pro", sdk_enabled: true, plan_config: PLAN,
    current_usage: { period_cost: 1, period_tokens_total: 10, period_tokens_by_model: { m: 10 }, period_cost_by_model: { m: 1 }, ...usage },
    billing_period: { start: "2026-11-01T00:00:00.000Z", end: "2026-12-01T00:00:00.000Z" },
    ...over,
  };
}

sdk("periods: same dates keep the larger counters; fresh dates take the service's; a new service_user_id resets", () => {
  const now = Date.parse("2026-11-15T00:00:00Z");
  const e = new UserEntry("u", now);
  assert.is(applyView(e, view(), now), "first");
  e.periodCost += 2; // delivered later
  e.tokensByModel.m = 30;
  assert.is(applyView(e, view({}, { period_cost: 1.5, period_tokens_by_model: { m: 50 } }), now), "same_period");
  assert.is(e.periodCost, 3);
  assert.equal({ ...e.tokensByModel }, { m: 50 }); // a prototype-less record: compared by its entries
  assert.is(applyView(e, view({ billing_period: { start: "2026-11-10T00:00:00.000Z", end: "2026-12-10T00:00:00.000Z" } }, { period_cost: 0.25 }), now), "fresh_period");
  assert.is(e.periodCost, 0.25);
  const before = e.sessions.own.id;
  e.periodCost = 7;
  assert.is(applyView(e, view({ service_user_id: "s2", billing_period: { start: "2026-11-10T00:00:00.000Z", end: "2026-12-10T00:00:00.000Z" } }, { period_cost: 0 }), now), "reset");
  assert.is(e.periodCost, 0);
  assert.is.not(e.sessions.own.id, before);
  assert.is(e.serviceUserId, "s2");
  // No plan in force: nothing gated.
  applyView(e, view({ sdk_enabled: false, service_user_id: "s2", plan: "none" }), now);
  assert.is(e.config, null);
});

sdk("periods: past period_end with no answer, counters clear and the next period is as long as the last", () => {
  const e = new UserEntry("u", Date.parse("2026-11-15T00:00:00Z"));
  applyView(e, view({ billing_period: { start: "2026-11-01T00:00:00.000Z", end: "2026-11-11T00:00:00.000Z" } }), 0);
  rollLocally(e, Date.parse("2026-11-25T00:00:00Z"));
  assert.is(e.periodStart, "2026-11-21T00:00:00.000Z");
  assert.is(e.periodEnd, "2026-12-01T00:00:00.000Z");
  assert.is(e.periodCost, 0);
  assert.equal({ ...e.tokensByModel }, {});
});

sdk("sessions: the library's own rotates after the window from its start; caller sessions are kept apart", () => {
  const e = new UserEntry("u", 0);
  e.timeoutMs = 1000;
  const a = e.sessions.at(undefined, 0, 1000);
  a.cost = 1;
  assert.is(e.sessions.at(undefined, 999, 1000), a);
  const b = e.sessions.at(undefined, 1000, 1000);
  assert.is.not(b.id, a.id);
  assert.is(b.cost, 0);
  const c = e.sessions.at("chat", 1000, 1000);
  assert.is(c.id, "chat");
  assert.is(e.sessions.at("chat", 1500, 1000), c);
  assert.is(e.idle(2000), false);
  assert.is(e.idle(2500), true);
});

sdk("money: 200 calls of $0.00125 count $0.25 exactly; holds given back leave nothing reserved", () => {
  const plan = { ...PLAN, cost_rates: { m: { input: 1.25, output: 0 } } };
  const e = new UserEntry("u", 0);
  const session = e.sessions.at(undefined, 0, e.timeoutMs);
  for (let i = 0; i < 200; i++) {
    const cost = rules.price("m", 1, 0, [], plan).cost_total;
    assert.is(cost, 0.00125);
    e.count(session, "m", 1, cost, 0);
  }
  const s = e.snapshot(0);
  assert.equal([s.period_cost, s.session_cost, s.period_cost_by_model.m], [0.25, 0.25, 0.25]);
  const holds = Array.from({ length: 3 }, () => ({ session, model: "m", cost: 0.1, tokens: 1 }));
  for (const h of holds) e.hold(h);
  assert.is(e.reservedCost, 0.3);
  for (const h of holds) e.unhold(h);
  assert.is(e.reservedCost, 0);
  assert.is(session.reserved, 0);
});

sdk.run();
