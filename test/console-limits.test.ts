// The console's words for a plan's windows and a user's dimensions (console/src/limits.ts):
// sentences, resets, which dimension blocks, and the service's refusal per limit and field.
import { test } from "uvu";
import * as assert from "uvu/assert";
import { blockingIndex, describeLimit, dimensionLabel, fmtUntil, limitProblems, resetText, stateOf, untilNextReset, type Dimension, type PlanLimit } from "../console/src/limits.ts";

const limit = (metric: PlanLimit["metric"], max: number, window: PlanLimit["window"], duration_minutes: number | null = null, model: string | null = null) => ({ metric, max, window, duration_minutes, model });

test("a limit reads as its price is said", () => {
  assert.is(describeLimit({ ...limit("spend", 0.1, "day") }), "$0.10 a day");
  assert.is(describeLimit({ ...limit("requests", 60, "minute") }), "60 requests a minute");
  assert.is(describeLimit({ ...limit("spend", 2, "rolling", 300) }), "$2 in any 5 hours");
  assert.is(describeLimit({ ...limit("spend", 50, "month") }), "$50 a month");
  assert.is(describeLimit({ ...limit("spend", 5.5, "week") }), "$5.50 a week");
  assert.is(describeLimit({ ...limit("requests", 1, "hour") }), "1 request an hour");
  assert.is(describeLimit({ ...limit("requests", 100, "rolling", 60) }), "100 requests in any hour");
  assert.is(describeLimit({ ...limit("requests", 100, "rolling", 90) }), "100 requests in any 90 minutes");
  assert.is(describeLimit({ ...limit("spend", 20, "rolling", 10_080) }), "$20 in any week");
  assert.is(describeLimit({ ...limit("tokens", 100_000, "period", null, "gpt-4.1") }), "100,000 tokens a billing period of gpt-4.1");
});

const dim = (over: Partial<Dimension>): Dimension => ({
  reason: "limit:daily",
  name: "daily",
  metric: "spend",
  window: "day",
  duration_minutes: null,
  model: null,
  max: 0.1,
  used: 0,
  pct: 0,
  soft_gate_at: 0.8,
  hard_gate_at: 1,
  window_start: "2026-11-28T00:00:00.000Z",
  resets_at: "2026-11-29T00:00:00.000Z",
  ...over,
});

test("a reset reads in the two largest units, and says why when there is none", () => {
  const now = Date.parse("2026-11-28T20:40:00.000Z");
  assert.is(fmtUntil("2026-11-29T00:00:00.000Z", now), "3 h 20 min");
  assert.is(fmtUntil("2026-11-30T01:00:00.000Z", now), "1 d 4 h");
  assert.is(fmtUntil("2026-11-28T21:25:30.000Z", now), "45 min");
  assert.is(fmtUntil("2026-11-28T20:40:30.000Z", now), "under a minute");
  assert.is(resetText(dim({}), now), "resets in 3 h 20 min");
  assert.is(resetText(dim({ resets_at: "2026-11-28T20:00:00.000Z" }), now), "resetting now");
  assert.is(resetText(dim({ max: 0, resets_at: null }), now), "blocks every call; never resets");
  assert.is(resetText(dim({ reason: "total_spend", window: "period", max: 1, resets_at: null, credits: { balance: 0, low_at: null } }), now), "prepaid: a grant lifts it, not a new period");
  assert.is(resetText(dim({ window: "rolling", duration_minutes: 300, resets_at: null }), now), "nothing counted in the window");
  // A rolling window: at its hard gate it resets when enough usage ages out; below, its oldest usage ages out.
  assert.is(resetText(dim({ window: "rolling", duration_minutes: 300, used: 0.1, pct: 1, resets_at: "2026-11-29T00:00:00.000Z" }), now), "resets in 3 h 20 min");
  assert.is(resetText(dim({ window: "rolling", duration_minutes: 300, used: 0.05, pct: 0.5, resets_at: "2026-11-29T00:00:00.000Z" }), now), "oldest usage ages out in 3 h 20 min");
  assert.is(untilNextReset([dim({}), dim({ resets_at: "2026-11-28T21:00:00.000Z" }), dim({ resets_at: null })], now), 20 * 60_000);
  assert.is(untilNextReset([dim({ resets_at: null })], now), null);
});

test("the blocking dimension is the one at its hard gate that lifts last, then the higher pct, then list order", () => {
  assert.is(blockingIndex([dim({ used: 0.05, pct: 0.5 })]), -1);
  const day = dim({ used: 0.1, pct: 1 });
  const month = dim({ reason: "limit:monthly", window: "month", max: 1, used: 1.2, pct: 1.2, resets_at: "2026-12-01T00:00:00.000Z" });
  assert.is(blockingIndex([day, month]), 1);
  assert.is(blockingIndex([month, day]), 0);
  // A cap of 0 never resets: it blocks last.
  assert.is(blockingIndex([month, dim({ max: 0, used: 0, pct: 1, resets_at: null })]), 1);
  // Same reset: the higher pct; same pct too: the first.
  assert.is(blockingIndex([day, dim({ used: 0.2, pct: 2 })]), 1);
  assert.is(blockingIndex([day, dim({ used: 0.1, pct: 1 })]), 0);
  // A per-limit hard gate below 1.
  assert.is(blockingIndex([dim({ used: 0.09, pct: 0.9, hard_gate_at: 0.9 })]), 0);
  // Decided as the gates decide, in nano-dollars: $9.9999996 of $10 is pct 1 rounded, and below the hard mark.
  assert.is(blockingIndex([dim({ max: 10, used: 9.9999996, pct: 1 })]), -1);
  assert.is(stateOf(dim({ max: 10, used: 9.9999996, pct: 1 })), "soft");
  assert.is(stateOf(dim({ max: 0.3, used: 0.1 + 0.2, pct: 1 })), "hard", "a float sum lands on the mark");
  assert.is(stateOf(dim({ metric: "requests", max: 1001, used: 800.8, pct: 0.8, soft_gate_at: 0.8 })), "soft");
  // No cap (max null) never blocks.
  assert.is(blockingIndex([dim({ reason: "total_spend", max: null, used: 5 })]), -1);
});

test("SPEC's three keep their labels; a limit is named with its sentence", () => {
  assert.is(dimensionLabel(dim({ reason: "total_spend", name: null, window: "period" })), "Period spend");
  assert.is(dimensionLabel(dim({ reason: "model_limit:gpt-4.1", name: null, metric: "tokens", model: "gpt-4.1" })), "gpt-4.1 tokens");
  assert.is(dimensionLabel(dim({})), "daily: $0.10 a day");
  assert.is(dimensionLabel(dim({ reason: "limit:burst", name: "burst", metric: "requests", max: 60, window: "minute" })), "burst: 60 requests a minute");
});

test("a team plan's dimension says it is the team's and whom it counts", () => {
  assert.is(dimensionLabel(dim({ reason: "team:total_spend", name: null, window: "period", scope: "team" })), "Team · Period spend (team)");
  assert.is(dimensionLabel(dim({ reason: "team:model_limit:gpt-4.1", name: null, metric: "tokens", model: "gpt-4.1", scope: "team" })), "Team · gpt-4.1 tokens (team)");
  assert.is(dimensionLabel(dim({ reason: "team:limit:seat", name: "seat", max: 50, window: "period", scope: "member" })), "Team · seat: $50 a billing period (per member)");
});

test("the service's 400 lands on the limit and field it names", () => {
  const p = limitProblems(
    'plans[0].limits[1] ("daily").name: duplicate of limits[0]; names are unique in a plan; plans[0].limits[2] ("burst").duration_minutes: only a rolling window takes duration_minutes; plans[0].time_zone: "Mars/Base" is not an IANA time zone name (e.g. "America/New_York", "UTC")',
    [],
  );
  assert.equal(p.rows, {
    1: { name: "duplicate of limit 1; names are unique in a plan" },
    2: { duration_minutes: "only a rolling window takes duration_minutes" },
  });
  assert.is(p.time_zone, '"Mars/Base" is not an IANA time zone name (e.g. "America/New_York", "UTC")');
  assert.equal(p.other, []);
  // A PATCH's problems carry no plans[i] prefix; anything else stays for the form's banner.
  const patch = limitProblems('limits[0] ("five-hour").max: must be a whole number for requests; limits: at most 16 per plan (17 sent)', []);
  assert.equal(patch.rows, { 0: { max: "must be a whole number for requests" } });
  assert.equal(patch.other, ["limits: at most 16 per plan (17 sent)"]);
  // The gateway's 422 issues, on a create and on a PATCH.
  const issues = limitProblems("body/plans/0/limits/0/max must be number", [
    { path: "/plans/0/limits/0/max", message: "must be number" },
    { path: "/limits/3/window", message: "is required" },
    { path: "/plans/0/time_zone", message: "must be string" },
  ]);
  assert.equal(issues.rows, { 0: { max: "must be number" }, 3: { window: "is required" } });
  assert.is(issues.time_zone, "must be string");
});

test.run();
