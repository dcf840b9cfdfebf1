// Which subscriptions recorded late can move events (and so are followed): pure history math.
import { test } from "uvu";
import * as assert from "uvu/assert";
import type { SubscriptionWindow } from "@meter/rules";
import { movesEvents, periodWindowMoves, teamWindowMoves } from "./move.ts";

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
const budget = { key: `spend:period|${oldPeriod.start.getTime()}`, end: oldPeriod.end.getTime(), n: 5 };
const today = { key: `spend:day|${ms("2026-11-30T00:00:00Z")}`, end: ms("2026-12-01T00:00:00Z"), n: 5 };
const burst = { key: `tokens:rolling:60|${ms("2026-11-30T17:00:00Z")}`, end: ms("2026-11-30T19:00:00Z"), n: 50 };

test("a team's window counts leave the old period's counter for the new one's, or the window document when the window began before it", () => {
  const moves = teamWindowMoves(oldPeriod, [{ counterId: "new", period: newPeriod, events: [memberEvent(budget, today, burst)] }], ms("2026-11-30T18:00:00Z"));
  assert.equal([...moves.out.values()], [{ ...budget, n: -5 }, { ...today, n: -5 }], "what the old counter held (never a rolling window)");
  assert.equal([...moves.into.get("new")!.values()], [{ key: `spend:period|${newPeriod.start.getTime()}`, end: newPeriod.end.getTime(), n: 5 }], "the period window is the new period's");
  assert.equal([...moves.doc.values()], [today], "today's window began before the new period: the window document counts it");
});

test("a period window that ended with the old period is still the new period's: counted there, nothing taken from the ended entry", () => {
  const moves = teamWindowMoves(oldPeriod, [{ counterId: "new", period: newPeriod, events: [memberEvent(budget, today)] }], ms("2026-12-01T00:03:00Z"));
  assert.is(moves.out.size, 0);
  assert.equal([...moves.into.get("new")!.values()], [{ key: `spend:period|${newPeriod.start.getTime()}`, end: newPeriod.end.getTime(), n: 5 }]);
  assert.is(moves.doc.size, 0, "yesterday's window gates nothing any more");
});

const seat = (team: string) => ({ ...budget, key: `team:${team}:${budget.key}`, n: 2 });
const userEvent = (user_id: string, ...windows: { key: string; end: number; n: number }[]) => ({ user_id, windows });
const newBudget = (prefix: string, n: number) => ({ key: `${prefix}spend:period|${newPeriod.start.getTime()}`, end: newPeriod.end.getTime(), n });

test("a user's own period window counts go to the field its new period names; other windows and member-scope ones stay", () => {
  const moves = periodWindowMoves(oldPeriod, [{ period: newPeriod, events: [userEvent("ann", budget, today, seat("t1")), userEvent("ann", budget)] }], ms("2026-11-30T18:00:00Z"), "");
  assert.equal([...moves.keys()], ["ann"]);
  assert.equal([...moves.get("ann")!.values()], [{ ...budget, n: -10 }, newBudget("", 10)]);
});

test("a team's move takes each member's member-scope period window counts to the team's new period, in that member's document", () => {
  const moves = periodWindowMoves(oldPeriod, [{ period: newPeriod, events: [userEvent("ann", budget, seat("t1")), userEvent("bob", seat("t1"), seat("t2"))] }], ms("2026-11-30T18:00:00Z"), "team:t1:");
  assert.equal([...moves.get("ann")!.values()], [{ ...seat("t1"), n: -2 }, newBudget("team:t1:", 2)], "the member's own period window is not the team's");
  assert.equal([...moves.get("bob")!.values()], [{ ...seat("t1"), n: -2 }, newBudget("team:t1:", 2)], "another team's window stays");
});

test("an ended old entry is left alone; a new one that ended gets nothing", () => {
  const after = periodWindowMoves(oldPeriod, [{ period: newPeriod, events: [userEvent("ann", budget)] }], ms("2026-12-01T00:03:00Z"), "");
  assert.equal([...after.get("ann")!.values()], [newBudget("", 5)]);
  const ended = periodWindowMoves(oldPeriod, [{ period: oldPeriod, events: [] }, { period: { start: new Date(ms("2026-11-20T00:00:00Z")), end: new Date(ms("2026-11-30T00:00:00Z")) }, events: [userEvent("ann", budget)] }], ms("2026-11-30T18:00:00Z"), "");
  assert.equal([...ended.get("ann")!.values()], [{ ...budget, n: -5 }]);
});

test.run();
