// Which subscriptions recorded late can move events (and so are followed): pure history math.
import { test } from "uvu";
import * as assert from "uvu/assert";
import type { SubscriptionWindow } from "@meter/rules";
import { movesEvents, periodWindowMoves, teamWindowMoves, userWindowMoves } from "./move.ts";
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
const memberEvent = (...windows: { key: string; end: number; n: number }[]) => ({ team: { windows } as never });
const budget = { key: `spend:period::|${oldPeriod.start.getTime()}`, end: oldPeriod.end.getTime(), n: 5 };
const today = { key: `spend:day|${ms("2026-11-30T00:00:00Z")}`, end: ms("2026-12-01T00:00:00Z"), n: 5 };
const burst = { key: `tokens:rolling:60|${ms("2026-11-30T17:00:00Z")}`, end: ms("2026-11-30T19:00:00Z"), n: 50 };

test("a team's window counts leave the old period's counter for the new one's, or the window document when the window began before it", () => {
  const moves = teamWindowMoves(oldPeriod, [{ counterId: "new", period: newPeriod, events: [memberEvent(budget, today, burst)] }], ms("2026-11-30T18:00:00Z"));
  assert.equal([...moves.out.values()], [{ ...budget, n: -5 }, { ...today, n: -5 }], "what the old counter held (never a rolling window)");
  assert.equal([...moves.into.get("new")!.values()], [{ key: `spend:period::|${newPeriod.start.getTime()}`, end: newPeriod.end.getTime(), n: 5 }], "the period window is the new period's");
  assert.equal([...moves.doc.values()], [today], "today's window began before the new period: the window document counts it");
});

test("a period window that ended with the old period is still the new period's: counted there, nothing taken from the ended entry", () => {
  const moves = teamWindowMoves(oldPeriod, [{ counterId: "new", period: newPeriod, events: [memberEvent(budget, today)] }], ms("2026-12-01T00:03:00Z"));
  assert.is(moves.out.size, 0);
  assert.equal([...moves.into.get("new")!.values()], [{ key: `spend:period::|${newPeriod.start.getTime()}`, end: newPeriod.end.getTime(), n: 5 }]);
  assert.is(moves.doc.size, 0, "yesterday's window gates nothing any more");
});

const seat = (team: string) => ({ ...budget, key: `team:${team}:${budget.key}`, n: 2 });
const userEvent = (user_id: string, ...windows: { key: string; end: number; n: number }[]) => ({ user_id, windows });
const newBudget = (prefix: string, n: number) => ({ key: `${prefix}spend:period::|${newPeriod.start.getTime()}`, end: newPeriod.end.getTime(), n });

test("a team's move takes each member's member-scope period window counts to the team's new period, in that member's document", () => {
  const moves = periodWindowMoves(oldPeriod, [{ period: newPeriod, events: [userEvent("ann", budget, seat("t1")), userEvent("bob", seat("t1"), seat("t2"))] }], ms("2026-11-30T18:00:00Z"), "team:t1:");
  assert.equal([...moves.get("ann")!.values()], [{ ...seat("t1"), n: -2 }, newBudget("team:t1:", 2)], "the member's own period window is not the team's");
  assert.equal([...moves.get("bob")!.values()], [{ ...seat("t1"), n: -2 }, newBudget("team:t1:", 2)], "another team's window stays");
});

test("an ended old entry is left alone; a new one that ended gets nothing", () => {
  const after = periodWindowMoves(oldPeriod, [{ period: newPeriod, events: [userEvent("ann", seat("t1"))] }], ms("2026-12-01T00:03:00Z"), "team:t1:");
  assert.equal([...after.get("ann")!.values()], [newBudget("team:t1:", 2)]);
  const earlier = { start: new Date(ms("2026-11-20T00:00:00Z")), end: new Date(ms("2026-11-30T00:00:00Z")) };
  const ended = periodWindowMoves(oldPeriod, [{ period: earlier, events: [userEvent("ann", seat("t1"))] }], ms("2026-11-30T18:00:00Z"), "team:t1:");
  assert.equal([...ended.get("ann")!.values()], [{ ...seat("t1"), n: -2 }]);
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
  const moves = userWindowMoves(fromOld(basic), "old", into(basic, stored(basic, "old", [seat("t1")])), evening);
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
