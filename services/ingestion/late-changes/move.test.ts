// Which subscriptions recorded late can move events (and so are followed): pure history math.
import { test } from "uvu";
import * as assert from "uvu/assert";
import type { SubscriptionWindow } from "@meter/rules";
import { movesEvents } from "./move.ts";

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

test.run();
