import { test } from "uvu";
import * as assert from "uvu/assert";
import { externalIdProblem, jsonDepth } from "@meter/rules";
import { EXTERNAL_ID_PATTERN, isDateTime, parseDateTime } from "./common.ts";

test("date-times without a zone are read as UTC, whatever the process's time zone", () => {
  const tz = process.env.TZ;
  process.env.TZ = "America/New_York";
  try {
    for (const [input, utc] of [
      ["2026-01-15T10:20:30", "2026-01-15T10:20:30.000Z"],
      ["2026-01-15 10:20:30.25", "2026-01-15T10:20:30.250Z"],
      ["2026-01-15t10:20:30z", "2026-01-15T10:20:30.000Z"],
      ["2026-01-15T10:20:30Z", "2026-01-15T10:20:30.000Z"],
      ["2026-01-15T10:20:30+02:00", "2026-01-15T08:20:30.000Z"],
      ["2026-01-15T10:20:30+0230", "2026-01-15T07:50:30.000Z"],
      ["2026-01-15T10:20:30-05", "2026-01-15T15:20:30.000Z"],
      ["2026-12-31T23:59:60Z", "2026-12-31T23:59:59.000Z"],
    ]) {
      assert.ok(isDateTime(input!), input);
      assert.is(parseDateTime(input!).toISOString(), utc, input);
    }
  } finally {
    if (tz === undefined) delete process.env.TZ;
    else process.env.TZ = tz;
  }
});

test("date-times out of range or malformed are refused", () => {
  for (const s of [
    "2026-02-29T00:00:00", "2026-02-30T00:00:00Z", "2026-13-01T00:00:00Z", "2026-01-01T24:00:00Z",
    "2026-01-01T23:60:00Z", "2026-01-01T00:00:61Z", "2026-01-01T00:00:00+24:00", "2026-01-01",
    "January", "2026-01-01T00:00Z", "",
  ]) {
    assert.not.ok(isDateTime(s), s);
  }
  assert.ok(isDateTime("2028-02-29T00:00:00"), "leap day");
});

test("nesting depth is counted without recursion, up to just past the limit", () => {
  assert.is(jsonDepth(1), 0);
  assert.is(jsonDepth({}), 1);
  assert.is(jsonDepth({ a: [1, { b: null }], c: {} }), 3);
  let deep: unknown = 1;
  for (let i = 0; i < 1_000_000; i++) deep = { a: deep };
  assert.is(jsonDepth(deep, 32), 33);
  assert.is(jsonDepth(deep), 1_000_000);
});

test("the client libraries' check of an external id refuses exactly what the schemas' pattern refuses", () => {
  const pattern = new RegExp(EXTERNAL_ID_PATTERN, "u");
  for (const id of [".", "..", "...", ".a", "a.", "user-1", "\u{1F600}", "a\ud800", "\udc00b", "\ud83d\ude00", "名前"]) {
    assert.is(externalIdProblem(id) === null, pattern.test(id), JSON.stringify(id));
  }
});

test.run();
