import { test } from "uvu";
import * as assert from "uvu/assert";
import { MeterApiError, MeterNetworkError } from "../src/errors.ts";
import { backoffMs } from "../src/transport.ts";

const many = (f: () => number) => Array.from({ length: 500 }, f);

test("a 429 is sent again after its Retry-After plus up to half of it, however many failures came before", () => {
  for (const failures of [1, 4, 10]) {
    const waits = many(() => backoffMs(failures, new MeterApiError(429, "busy", 2_000)));
    assert.ok(waits.every((w) => w >= 2_000 && w <= 3_000), `${failures}: ${Math.min(...waits)}-${Math.max(...waits)}`);
    // Spread out, not all at one moment.
    assert.ok(Math.max(...waits) - Math.min(...waits) > 300);
  }
  // Taken up to 60 s.
  assert.ok(many(() => backoffMs(1, new MeterApiError(429, "busy", 3_600_000))).every((w) => w >= 60_000 && w <= 90_000));
  // A Retry-After of 0 (a proxy's) is at least a quarter second: no spinning against a busy service.
  assert.ok(many(() => backoffMs(1, new MeterApiError(429, "busy", 0))).every((w) => w >= 250 && w <= 375));
});

test("other failures back off doubling, never before a Retry-After", () => {
  assert.ok(many(() => backoffMs(5, new MeterApiError(503, "down", 1_000))).every((w) => w >= 4_000 && w <= 8_000));
  assert.ok(many(() => backoffMs(1, new MeterApiError(503, "down", 5_000))).every((w) => w >= 5_000 && w <= 7_500));
  assert.ok(many(() => backoffMs(3, new MeterNetworkError("refused"))).every((w) => w >= 1_000 && w <= 2_000));
  assert.ok(many(() => backoffMs(20, new MeterNetworkError("refused"))).every((w) => w >= 15_000 && w <= 30_000));
});

test.run();
