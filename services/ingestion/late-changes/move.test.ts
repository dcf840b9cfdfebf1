// Which subscriptions recorded late can move events (and so are followed): pure history math.
import { test } from "uvu";
import * as assert from "uvu/assert";
import type { SubscriptionWindow } from "@meter/rules";
import { movesEvents, teamWindowMoves, userWindowMoves } from "./move.ts";
import type { KnownTeam, PlanInfo } from "../adapters/plans.ts";
import type { TeamAttribution } from "../domain/attribution.ts";
import { addTeamShare } from "../teams/shares.ts";
import { windowShares, type WindowLimit } from "../windows/shares.ts";
import type { UsageEventDoc } from "../store/usage-events.ts";

const now = new Date("2026-12-02T05:00:00Z");
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const sub = (start: string | number, end: string | number, effectiveAt = now): SubscriptionWindow => ({
  planId: "p",
  planName: "pro",
  periodStart: new Date(start),
  periodEnd: new Date(end),
  effectiveAt,
});
const horizon = new Date(now.getTime() + 10 * 60_000);

test("a first subscription in calendar months continues the windows counted: nothing to follow", () => {
  assert.is(movesEvents([sub("2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z")], 0, horizon), false);
});

test("a first subscription whose dates began mid-month takes this month's events into its own window", () => {
  assert.is(movesEvents([sub("2026-11-20T00:00:00Z", "2026-12-20T00:00:00Z")], 0, horizon), true);
});

test("an upgrade with fresh dates that began hours ago moves what was counted since", () => {
  const history = [sub("2026-11-20T00:00:00Z", "2026-12-20T00:00:00Z", new Date("2026-11-20T00:00:00Z")), sub(now.getTime() - 3 * HOUR, now.getTime() + 30 * DAY)];
  assert.is(movesEvents(history, 1, horizon), true);
});

test("a plan change on the same dates and a renewal starting where the window rolled on move nothing", () => {
  const first = sub("2026-11-20T00:00:00Z", "2026-12-20T00:00:00Z", new Date("2026-11-20T00:00:00Z"));
  assert.is(movesEvents([first, sub("2026-11-20T00:00:00Z", "2026-12-20T00:00:00Z")], 1, horizon), false, "same dates, another plan");
  const lapsed = sub("2026-10-20T00:00:00Z", "2026-11-20T00:00:00Z", new Date("2026-10-20T00:00:00Z"));
  // Rolled on from Nov 20 by its length; the renewal recorded late starts there too, with its own end.
  assert.is(movesEvents([lapsed, sub("2026-11-20T00:00:00Z", "2026-12-18T00:00:00Z")], 1, horizon), false, "renewal");
});

test("a subscription whose dates begin after the horizon moves nothing yet", () => {
  assert.is(movesEvents([sub(now.getTime() + DAY, now.getTime() + 31 * DAY)], 0, horizon), false);
});

const ms = (iso: string) => new Date(iso).getTime();
const oldPeriod = { start: new Date("2026-11-01T00:00:00Z"), end: new Date("2026-12-01T00:00:00Z") };
const newPeriod = { start: new Date("2026-11-30T12:00:00Z"), end: new Date("2026-12-30T12:00:00Z") };

// A team's windows: the team-scope ones in its period counters or window document, the
// member-scope ones in each member's window document.
const teamLimit = (name: string, fields: Partial<WindowLimit>): WindowLimit => ({
  name, metric: "spend", max: 100, window: "period", duration_minutes: null, model: null, soft_gate_at: null, hard_gate_at: null, scope: null, ...fields,
});
const teamPlan = (id: string, limits: WindowLimit[]): PlanInfo => ({
  id, name: id, maxSpendPerPeriod: 100, softGateAt: 0.8, hardGateAt: 1, modelLimits: {}, costRates: {}, toolCosts: {}, defaultToolCost: 0,
  sessionTimeoutMinutes: 30, preCallEstimate: false, preCallBufferTokens: 0,
  pricing: { cost_rates: { "gpt-4o": { input: 1, output: 1 } }, model_limits: {}, default_cost_rate: null, tool_costs: {}, default_tool_cost: 0 },
  limits, timeZone: "UTC", creditsEnabled: false,
});
const teamLimits = [
  teamLimit("budget", {}),
  teamLimit("daily", { window: "day" }),
  teamLimit("burst", { metric: "tokens", window: "rolling", duration_minutes: 60 }),
  teamLimit("seat", { scope: "member" }),
];
const team1 = teamPlan("team", teamLimits);
const upgraded = teamPlan("upgraded", [...teamLimits, teamLimit("calls", { metric: "requests", window: "day" })]);
const acme: KnownTeam = { id: "t1", externalTeamId: "acme", name: "Acme", subscriptions: [], plans: new Map([[team1.id, team1], [upgraded.id, upgraded]]) };
const attributed = (counterId: string, p: { start: Date; end: Date }, plan = team1): TeamAttribution => ({ team: acme, plan, counterId, period: { ...p, subscription: null, calendar: false } });
/** A member's $2 event of 30 tokens stamped at 16:00, stored as the team's `a` counted it on arrival at 17:00. */
const memberEvent = (user_id: string, a: TeamAttribution) => {
  const e = { user_id, timestamp: new Date(ms("2026-11-30T16:00:00Z")), model: "gpt-4o", input_tokens: 10, output_tokens: 20, cost_total: 2 } as unknown as UsageEventDoc;
  addTeamShare(e, a, "gpt-4o", new Date(ms("2026-11-30T17:00:00Z")));
  return e;
};
const key = (dimension: string, start: number | Date) => `${dimension}|${new Date(start).getTime()}`;
const nCounts = (m: Map<string, { n: number }> | undefined) => [...(m ?? new Map()).entries()].map(([k, v]) => [k, v.n]);
const oldTeam = attributed("old", oldPeriod);
const newTeam = attributed("new", newPeriod);
const from = (team: TeamAttribution | null = oldTeam) => ({ counterId: "old", ...oldPeriod, team });
const nov30 = ms("2026-11-30T00:00:00Z");

test("a team's window counts leave the old period's counter for the new one's, or the window document for a window that began before the new period", () => {
  const moves = teamWindowMoves(from(), [{ team: newTeam, events: [memberEvent("ann", oldTeam)] }], new Date(ms("2026-11-30T18:00:00Z")));
  assert.equal(nCounts(moves.out), [[key("spend:period::", oldPeriod.start), -2e9], [key("spend:day::", nov30), -2e9]], "what the old counter held (never a rolling window)");
  assert.equal(nCounts(moves.into.get("new")), [[key("spend:period::", newPeriod.start), 2e9]], "the period window is the new period's");
  assert.equal(nCounts(moves.doc), [[key("spend:day::", nov30), 2e9]], "today began before the new period: the window document counts it; the rolling window stays where it is");
  assert.equal(nCounts(moves.members.get("ann")), [[`team:t1:${key("spend:period::", oldPeriod.start)}`, -2e9], [`team:t1:${key("spend:period::", newPeriod.start)}`, 2e9]], "the member's seat of the team's period");
});

test("a period window that ended with the old period is still the new period's: counted there, nothing taken from the ended entries", () => {
  const moves = teamWindowMoves(from(), [{ team: newTeam, events: [memberEvent("ann", oldTeam)] }], new Date(ms("2026-12-01T00:03:00Z")));
  assert.is(moves.out.size, 0);
  assert.equal(nCounts(moves.into.get("new")), [[key("spend:period::", newPeriod.start), 2e9]]);
  assert.is(moves.doc.size, 0, "yesterday's window gates nothing any more");
  assert.equal(nCounts(moves.members.get("ann")), [[`team:t1:${key("spend:period::", newPeriod.start)}`, 2e9]]);
});

test("a share stored on arrival leaves where its own period placed it, even when the window the history now gives its counter ends elsewhere", () => {
  // Arrived in a period of the same start that ended at 18:00 (a rolled-on window): today's
  // window crossed its end, so arrival counted it in the window document, not the counter.
  const arrivedIn = attributed("old", { start: oldPeriod.start, end: new Date(ms("2026-11-30T18:00:00Z")) });
  const moves = teamWindowMoves(from(), [{ team: newTeam, events: [memberEvent("ann", arrivedIn)] }], new Date(ms("2026-11-30T17:30:00Z")));
  assert.equal(nCounts(moves.out), [[key("spend:period::", oldPeriod.start), -2e9]], "nothing of today's window taken from the counter");
  assert.is(moves.doc.size, 0, "today's window stays in the window document, where the new period counts it too");
});

test("a team's late upgrade counts the moved events in the limits only its new plan has", () => {
  const moves = teamWindowMoves(from(), [{ team: attributed("new", newPeriod, upgraded), events: [memberEvent("ann", oldTeam)] }], new Date(ms("2026-11-30T18:00:00Z")));
  assert.equal(nCounts(moves.doc), [[key("spend:day::", nov30), 2e9], [key("requests:day::", nov30), 1]]);
});

test("an event an earlier move brought in leaves what the old period's plan counts; with that plan unknown, nothing", () => {
  const brought = memberEvent("ann", attributed("older", { start: new Date(ms("2026-10-01T00:00:00Z")), end: oldPeriod.end }));
  const evening = new Date(ms("2026-11-30T18:00:00Z"));
  const known = teamWindowMoves(from(), [{ team: newTeam, events: [brought] }], evening);
  assert.equal(nCounts(known.out), [[key("spend:period::", oldPeriod.start), -2e9], [key("spend:day::", nov30), -2e9]]);
  const unknown = teamWindowMoves(from(null), [{ team: newTeam, events: [brought] }], evening);
  assert.is(unknown.out.size, 0);
  assert.equal(nCounts(unknown.into.get("new")), [[key("spend:period::", newPeriod.start), 2e9]]);
});

// A user's own windows: as the old period's plan counted the event, then as the new period's plan counts it.
const limit = (name: string, fields: Partial<WindowLimit>): WindowLimit => ({
  name, metric: "spend", max: 100, window: "period", duration_minutes: null, model: null, soft_gate_at: null, hard_gate_at: null, scope: null, ...fields,
});
const pricing = { cost_rates: { "gpt-4o": { input: 1, output: 1 } }, model_limits: {}, tool_costs: {}, default_tool_cost: 0 };
const basic = { limits: [limit("daily", { window: "day" }), limit("cycle", {})], timeZone: "UTC", pricing };
const pro = {
  limits: [limit("daily", { window: "day", max: 500 }), limit("cycle", { max: 1000 }), limit("tokens", { metric: "tokens", window: "period" }), limit("4o", { metric: "tokens", window: "period", model: "gpt-4o", max: 50 })],
  timeZone: "UTC",
  pricing,
};
const arrived = ms("2026-11-30T17:00:00Z");
/** A $2 event of 30 tokens stamped at 16:00, stored as `plan` counted it in `period` on arrival. */
const stored = (plan: typeof basic | null, counter_id: string, extra: { key: string; end: number; n: number }[] = [], model = "gpt-4o") => {
  const e = { timestamp: new Date(ms("2026-11-30T16:00:00Z")), model, input_tokens: 10, output_tokens: 20, cost_total: 2, counter_id };
  return { ...e, windows: [...(windowShares(plan, oldPeriod, e, new Date(arrived)) ?? []), ...extra] } as unknown as UsageEventDoc;
};
const fromOld = (plan: typeof basic | null) => ({ ...oldPeriod, plan });
const evening = new Date(ms("2026-11-30T18:00:00Z"));
const into = (plan: typeof basic | null, ...events: UsageEventDoc[]) => [{ period: { ...newPeriod, subscription: null, calendar: false }, plan: plan as never, events }];

test("a user's own period window counts go to the field its new period names; its day window stays; member-scope shares stay", () => {
  const moves = userWindowMoves(fromOld(basic), "old", into(basic, stored(basic, "old", [{ key: `team:t1:${key("spend:period::", oldPeriod.start)}`, end: oldPeriod.end.getTime(), n: 2 }])), evening);
  assert.equal([...moves.values()], [
    { key: `spend:period::|${oldPeriod.start.getTime()}`, end: oldPeriod.end.getTime(), n: -2e9 },
    { key: `spend:period::|${newPeriod.start.getTime()}`, end: newPeriod.end.getTime(), n: 2e9 },
  ]);
});

test("a late upgrade counts the moved events in the limits only the new plan has, naming the model as the new plan does", () => {
  // Stored under no plan, so with the model's name as sent: the new plan's limit on gpt-4o counts it.
  const moves = userWindowMoves(fromOld(null), "old", into(pro, stored(null, "old", [], "gpt-4o-2024-08-06")), evening);
  const keys = [...moves.values()].map((s) => [s.key.split("|")[0], s.n]);
  assert.equal(keys, [["spend:day::", 2e9], ["spend:period::", 2e9], ["tokens:period::", 30], ["tokens:period::gpt-4o", 30]]);
});

test("an event an earlier move brought in leaves what the old period's plan counted, not its stored shares", () => {
  // Stored in a period before `oldPeriod` (its stored fields name that one); now moving on again.
  const e = stored(basic, "older");
  const moves = userWindowMoves(fromOld(basic), "old", into(basic, e), evening);
  assert.equal([...moves.values()].map((s) => [s.key, s.n]), [
    [`spend:period::|${oldPeriod.start.getTime()}`, -2e9],
    [`spend:period::|${newPeriod.start.getTime()}`, 2e9],
  ]);
});

test("a user's entries that ended are left alone: nothing taken from the old period's after it ended", () => {
  const moves = userWindowMoves(fromOld(basic), "old", into(basic, stored(basic, "old")), new Date(ms("2026-12-01T00:03:00Z")));
  assert.equal([...moves.values()].map((s) => [s.key, s.n]), [[`spend:period::|${newPeriod.start.getTime()}`, 2e9]], "yesterday's day window and the old period gate nothing");
});

test.run();
