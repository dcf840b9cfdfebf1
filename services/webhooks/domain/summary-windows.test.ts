import { test } from "uvu";
import * as assert from "uvu/assert";
import { previousPeriod } from "./summary-windows.ts";

test("summary periods: previous UTC day, Monday week, calendar month", () => {
  const iso = (p: { start: Date; end: Date }) => [p.start.toISOString(), p.end.toISOString()];
  assert.equal(iso(previousPeriod("daily", new Date("2026-03-01T06:00:00Z"))), ["2026-02-28T00:00:00.000Z", "2026-03-01T00:00:00.000Z"]);
  // 2026-11-23 is a Monday
  assert.equal(iso(previousPeriod("weekly", new Date("2026-11-23T06:00:00Z"))), ["2026-11-16T00:00:00.000Z", "2026-11-23T00:00:00.000Z"]);
  assert.equal(iso(previousPeriod("weekly", new Date("2026-11-25T06:00:00Z"))), ["2026-11-16T00:00:00.000Z", "2026-11-23T00:00:00.000Z"]);
  assert.equal(iso(previousPeriod("monthly", new Date("2026-01-01T06:00:00Z"))), ["2025-12-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z"]);
});

test.run();
