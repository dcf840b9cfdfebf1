import { test } from "uvu";
import * as assert from "uvu/assert";
import { dimensionKey } from "@meter/rules";
import { windowField, type WindowDelta } from "./shares.ts";
import { planSlices, rollingSliceKey, settledIn, sliceKeyOfShare, windowSettlement, type WindowLeaseEntry } from "./slices.ts";

// The pure rules of window slices: which slice a share settles against, what a rolling window
// has counted, grants against cap - counted - others' slices, and when usage must bump the version.
const RPM = dimensionKey({ metric: "requests", window: "minute", duration_minutes: null, model: null });
const ROLL = dimensionKey({ metric: "spend", window: "rolling", duration_minutes: 60, model: "a.b" });
const NOW = Date.parse("2026-03-07T17:00:30Z");
const MINUTE = NOW - (NOW % 60_000);
const live = (s: WindowLeaseEntry["s"]): WindowLeaseEntry => ({ expires_at: new Date(NOW + 10_000), s });

test("a calendar share settles against its window's slice; a rolling window's buckets against its one slice", () => {
  assert.is(sliceKeyOfShare(windowField(RPM, MINUTE)), windowField(RPM, MINUTE));
  assert.is(sliceKeyOfShare(windowField(ROLL, MINUTE)), rollingSliceKey(ROLL));
  assert.ok(!rollingSliceKey(ROLL).includes("."), "model names are field-key encoded");
  // A team plan's member-scope windows, prefixed with the team in the member's document.
  const member = "team:6f1c2d3e-0000-4000-8000-000000000001:";
  assert.is(sliceKeyOfShare(member + windowField(RPM, MINUTE)), member + windowField(RPM, MINUTE));
  assert.is(sliceKeyOfShare(member + windowField(ROLL, MINUTE)), member + rollingSliceKey(ROLL));
});

test("a rolling window counts its live buckets only", () => {
  const w = { [windowField(ROLL, NOW - 30 * 60_000)]: { n: 5, e: 0 }, [windowField(ROLL, NOW - 61 * 60_000)]: { n: 7, e: 0 }, [windowField(RPM, MINUTE)]: { n: 9, e: NOW + 1 } };
  assert.is(settledIn(w, rollingSliceKey(ROLL), { duration: 60 }, NOW), 5);
  assert.is(settledIn(w, windowField(RPM, MINUTE), null, NOW), 9);
  assert.is(settledIn(w, windowField(RPM, MINUTE), null, NOW + 60_000), 0, "an ended window counts nothing");
});

test("grants share what is neither counted nor held; ended and lapsed slices hold nothing", () => {
  const key = windowField(RPM, MINUTE);
  const leases: Record<string, WindowLeaseEntry> = {
    b: live({ [key]: { granted: 20, spent: 5, e: MINUTE + 60_000 } }),
    lapsed: { expires_at: new Date(NOW - 60_000), s: { [key]: { granted: 30, spent: 0, e: MINUTE + 60_000 } } },
    ended: live({ [windowField(RPM, MINUTE - 60_000)]: { granted: 30, spent: 0, e: MINUTE } }),
  };
  const ask = { key, cap: 60, settled: 10, end: MINUTE + 60_000, need: 1, want: 100 };
  const { grants, update } = planSlices(leases, "a", [ask], NOW, 60_000, 1_000);
  // 60 - 10 counted - 15 held by b = 35; an equal share among b, a and one more.
  assert.is(grants[0]!.added, Math.floor(35 / 3));
  assert.is(grants[0]!.remaining, 35 - 11);
  assert.ok(update && (update.$unset as Record<string, string>)["leases.lapsed"] === "", "a lapsed lease goes");
  assert.is(planSlices(leases, "a", [{ ...ask, need: 36 }], NOW, 60_000, 1_000).update, null, "more than remains: nothing written");
});

test("usage settles against a slice that covers it; anything else bumps the version", () => {
  const key = windowField(RPM, MINUTE);
  const leases = { a: live({ [key]: { granted: 3, spent: 1, e: MINUTE + 60_000 } }) };
  const delta = (byLease: [string, number][], unleased = false): WindowDelta => ({
    id: "p|u",
    productId: "p",
    userId: "u",
    add: new Map(),
    byLease: new Map(byLease.map(([l, n]) => [l, new Map([[key, n]])])),
    unleased,
  });
  assert.equal(windowSettlement(delta([["a", 2]]), leases, NOW, 1_000), { spent: { [`leases.a.s.${key}.spent`]: 2 }, bump: false });
  assert.equal(windowSettlement(delta([["a", 3]]), leases, NOW, 1_000), { spent: { [`leases.a.s.${key}.spent`]: 3 }, bump: true }, "past its slice");
  assert.equal(windowSettlement(delta([["x", 1]]), leases, NOW, 1_000), { spent: {}, bump: true }, "a lease without a slice here");
  assert.equal(windowSettlement(delta([["a", 1]], true), leases, NOW, 1_000).bump, true, "some usage from no lease");
  assert.equal(windowSettlement(delta([["a", 1]]), leases, NOW + 15_000, 1_000).bump, true, "a lapsed lease holds nothing back");
});

test.run();
