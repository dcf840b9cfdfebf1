import { test } from "uvu";
import * as assert from "uvu/assert";
import { Code, ConnectError, retryAfterHint } from "./errors.ts";
import { InFlightBound } from "./in-flight-bound.ts";

function refusal(fn: () => unknown): ConnectError {
  try {
    fn();
  } catch (err) {
    assert.instance(err, ConnectError);
    return err as ConnectError;
  }
  throw new Error("expected a refusal");
}

test("work beyond the bound is refused with a retry hint; what is given back makes room", () => {
  let now = 0;
  const changes: number[] = [];
  const bound = new InFlightBound(100, 10_000, () => now, (d) => changes.push(d));
  const a = bound.take(60, "events");
  const b = bound.take(40, "events");
  assert.is(bound.inFlight, 100);
  const err = refusal(() => bound.take(1, "events"));
  assert.is(err.code, Code.ResourceExhausted);
  // Nothing stored yet: the pace is unknown, so the shortest hint.
  assert.is(retryAfterHint(err), 1);
  assert.match(err.rawMessage, /holds 100 events not yet stored \(at most 100\); retry in 1 s/);
  now += 1_000;
  a();
  a(); // a second call gives back nothing more
  assert.is(bound.inFlight, 40);
  bound.take(60, "events")();
  b();
  assert.equal(changes, [60, 40, -60, 60, -60, -40]);
});

test("a piece larger than the bound passes when nothing else is held; 0 is no bound", () => {
  const bound = new InFlightBound(10);
  const big = bound.take(50, "events");
  refusal(() => bound.take(1, "events"));
  big();
  const none = new InFlightBound(0);
  for (let i = 0; i < 5; i++) none.take(1_000_000, "events");
  assert.is(none.inFlight, 5_000_000);
});

test("the hint is the time the excess takes at the pace stored while busy, idle time left out", () => {
  let now = 0;
  const bound = new InFlightBound(1_000, 10_000, () => now);
  // 1,000 events stored in 2 s of busy time: 500 a second.
  const first = bound.take(1_000, "events");
  now += 2_000;
  first();
  // An idle minute changes nothing of the pace (both sums decay alike).
  now += 60_000;
  assert.ok(Math.abs(bound.pace()! - 500) < 1e-6, String(bound.pace()));
  const held = bound.take(1_000, "events");
  // 2,000 more than the bound would hold: 4 s at 500 a second.
  assert.is(retryAfterHint(refusal(() => bound.take(2_000, "events"))), 4);
  assert.is(retryAfterHint(refusal(() => bound.take(1, "events"))), 1);
  held(false); // work that failed counts no pace
  assert.ok(Math.abs(bound.pace()! - 500) < 1, String(bound.pace()));
});

test("a resource_exhausted error without a hint (a request too large) has none", () => {
  assert.is(retryAfterHint(new ConnectError("too large", Code.ResourceExhausted)), undefined);
  assert.is(retryAfterHint(new ConnectError("x", Code.Unavailable, { "meter-retry-after": "3" })), undefined);
});

test.run();
