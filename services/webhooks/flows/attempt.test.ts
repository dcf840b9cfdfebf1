import { test } from "uvu";
import * as assert from "uvu/assert";
import { delayBefore } from "./attempt.ts";

test("retry table: immediate, 1 min, 5 min, 30 min, 2 h, 8 h", () => {
  assert.equal([1, 2, 3, 4, 5, 6].map((n) => delayBefore(n, 1)), [0, 60_000, 300_000, 1_800_000, 7_200_000, 28_800_000]);
  assert.is(delayBefore(2, 1 / 6000), 10);
});

test.run();
