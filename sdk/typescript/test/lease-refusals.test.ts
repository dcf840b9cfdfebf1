// Which budget a lease refusal names when several are short: the one that allows a call again last.
import { test } from "uvu";
import * as assert from "uvu/assert";
import { liftsLast } from "../src/leases.ts";
import type { GuardResult } from "../src/types.ts";

const short = (gate_reason: string, resets_at: string | null) => ({ status: "hard_gate", gate_reason, resets_at }) as GuardResult;

test("liftsLast: the latest resets_at, never (null) latest of all, ties the first named", () => {
  const day = short("team:limit:daily", "2026-12-05T00:00:00.000Z");
  const period = short("total_spend", "2026-12-15T00:00:00.000Z");
  assert.is(liftsLast([day, period])?.gate_reason, "total_spend");
  assert.is(liftsLast([period, day])?.gate_reason, "total_spend");
  assert.is(liftsLast([period, short("limit:off", null), day])?.gate_reason, "limit:off");
  assert.is(liftsLast([day, short("limit:other", day.resets_at!)])?.gate_reason, "team:limit:daily");
  assert.is(liftsLast([]), null);
});

test.run();
