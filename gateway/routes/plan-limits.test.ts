import { suite } from "uvu";
import * as assert from "uvu/assert";
import { randomUUID } from "node:crypto";
import type { Api } from "../../test/support/http.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";
import { userOnPlan } from "../../test/support/rest.ts";

// A plan's `limits` and `time_zone` (BUDGETS.md §2) through the gateway and the plans service.
const t = suite<{ stack: TestStack; a: Api }>("plan limits and time zone over HTTP");

t.before(async (ctx) => {
  ctx.stack = await startTestStack();
  ctx.a = (await ctx.stack.newProduct("Plan limits")).api;
});

t.after(async (ctx) => {
  await ctx.stack.close();
});

const unique = (base: string) => `${base}-${randomUUID().slice(0, 8)}`;

const WINDOWED = [
  { name: "daily", metric: "spend", max: 0.1, window: "day" },
  { name: "monthly", metric: "spend", max: 1, window: "month", soft_gate_at: 0.5 },
  { name: "five-hours", metric: "spend", max: 0.5, window: "rolling", duration_minutes: 300 },
  { name: "rpm", metric: "requests", max: 5, window: "minute", hard_gate_at: 1 },
  { name: "gpt_tokens", metric: "tokens", max: 100000, window: "week", model: "gpt-4o" },
  { name: "seat", metric: "spend", max: 50, window: "month", scope: "member" },
];

/** A limit as answered: every field present, null when not given; scope team when not given. */
const full = (l: Record<string, unknown>) => ({
  duration_minutes: null,
  model: null,
  soft_gate_at: null,
  hard_gate_at: null,
  scope: "team",
  ...l,
});

t("limits and time_zone round-trip through create, list and PATCH", async ({ a }) => {
  const name = unique("windows");
  const created = await a.post("/config/plans", { plans: [{ name, limits: WINDOWED, time_zone: "America/New_York" }] });
  assert.is(created.status, 201, JSON.stringify(created.body));
  const plan = created.body.plans[0];
  assert.equal(plan.limits, WINDOWED.map(full));
  assert.is(plan.time_zone, "America/New_York");

  const listed = (await a.get("/config/plans")).body.plans.find((p: { id: string }) => p.id === plan.id);
  assert.equal(listed.limits, WINDOWED.map(full));
  assert.is(listed.time_zone, "America/New_York");

  // PATCH replaces the list whole and leaves time_zone alone when not sent.
  const patched = await a.patch(`/config/plans/${plan.id}`, { limits: [WINDOWED[3]] });
  assert.is(patched.status, 200, JSON.stringify(patched.body));
  assert.equal(patched.body.limits, [full(WINDOWED[3]!)]);
  assert.is(patched.body.time_zone, "America/New_York");

  // Other fields leave limits alone; null clears both.
  const other = await a.patch(`/config/plans/${plan.id}`, { max_spend_per_period: 3 });
  assert.equal(other.body.limits, [full(WINDOWED[3]!)]);
  const cleared = await a.patch(`/config/plans/${plan.id}`, { limits: null, time_zone: null });
  assert.is(cleared.status, 200, JSON.stringify(cleared.body));
  assert.equal(cleared.body.limits, []);
  assert.is(cleared.body.time_zone, "UTC");
  const again = await a.patch(`/config/plans/${plan.id}`, { limits: WINDOWED, time_zone: "Europe/Berlin" });
  assert.equal(again.body.limits, WINDOWED.map(full));
  assert.is(again.body.time_zone, "Europe/Berlin");
  const emptied = await a.patch(`/config/plans/${plan.id}`, { limits: [] });
  assert.equal(emptied.body.limits, []);
});

t("a time zone in another letter case is kept in the database's case (client runtimes know no other); an alias stays as sent", async ({ a }) => {
  const res = await a.post("/config/plans", { plans: [{ name: unique("zones"), time_zone: "america/new_york" }] });
  assert.is(res.status, 201, JSON.stringify(res.body));
  assert.is(res.body.plans[0].time_zone, "America/New_York");
  const patched = await a.patch(`/config/plans/${res.body.plans[0].id}`, { time_zone: "utc" });
  assert.is(patched.body.time_zone, "UTC");
  const alias = await a.patch(`/config/plans/${res.body.plans[0].id}`, { time_zone: "US/Eastern" });
  assert.is(alias.body.time_zone, "US/Eastern");
});

t("a body of many bad limits is answered with a bounded list of problems", async ({ a }) => {
  const limits = Array.from({ length: 2_000 }, () => ({ name: "", metric: "x", max: -1, window: "y", duration_minutes: 1 }));
  const res = await a.post("/config/plans", { plans: [{ name: unique("many"), limits }] });
  assert.is(res.status, 400);
  assert.match(res.body.detail, /limits: at most 16 per plan \(2000 sent\)/);
  assert.match(res.body.detail, /; and \d+ more$/);
  assert.ok(res.body.detail.length < 10_000, `${res.body.detail.length} characters`);
});

t("a plan without limits answers an empty list and UTC", async ({ a }) => {
  const res = await a.post("/config/plans", { plans: [{ name: unique("plain"), max_spend_per_period: 5 }] });
  assert.is(res.status, 201, JSON.stringify(res.body));
  assert.equal(res.body.plans[0].limits, []);
  assert.is(res.body.plans[0].time_zone, "UTC");
});

const INVALID: { why: string; limits?: unknown[]; time_zone?: string; says: RegExp }[] = [
  { why: "unknown metric", limits: [{ name: "a", metric: "dollars", max: 1, window: "day" }], says: /limits\[0\] \("a"\)\.metric: "dollars" is not one of spend, tokens, requests/ },
  { why: "unknown window", limits: [{ name: "a", metric: "spend", max: 1, window: "fortnight" }], says: /limits\[0\] \("a"\)\.window: "fortnight" is not one of/ },
  {
    why: "duplicate name",
    limits: [
      { name: "a", metric: "spend", max: 1, window: "day" },
      { name: "a", metric: "spend", max: 2, window: "month" },
    ],
    says: /limits\[1\] \("a"\)\.name: duplicate of limits\[0\]/,
  },
  {
    why: "duration_minutes on a calendar window",
    limits: [
      { name: "rpm", metric: "requests", max: 5, window: "minute" },
      { name: "daily", metric: "spend", max: 1, window: "day", duration_minutes: 60 },
    ],
    says: /limits\[1\] \("daily"\)\.duration_minutes: only a rolling window takes duration_minutes/,
  },
  { why: "rolling without duration", limits: [{ name: "r", metric: "spend", max: 1, window: "rolling" }], says: /limits\[0\] \("r"\)\.duration_minutes: a rolling window needs/ },
  { why: "rolling too long", limits: [{ name: "r", metric: "spend", max: 1, window: "rolling", duration_minutes: 44641 }], says: /limits\[0\] \("r"\)\.duration_minutes: must be a whole number of minutes, 1-44640/ },
  { why: "fractional duration", limits: [{ name: "r", metric: "spend", max: 1, window: "rolling", duration_minutes: 1.5 }], says: /limits\[0\] \("r"\)\.duration_minutes/ },
  { why: "fractional requests", limits: [{ name: "q", metric: "requests", max: 2.5, window: "hour" }], says: /limits\[0\] \("q"\)\.max: must be a whole number for requests/ },
  { why: "negative max", limits: [{ name: "n", metric: "spend", max: -1, window: "day" }], says: /limits\[0\] \("n"\)\.max: must be a non-negative number/ },
  { why: "spend max past any real one", limits: [{ name: "big", metric: "spend", max: 2e9, window: "day" }], says: /limits\[0\] \("big"\)\.max: must be at most 1,000,000,000 dollars/ },
  { why: "bad name", limits: [{ name: "Daily Cap", metric: "spend", max: 1, window: "day" }], says: /limits\[0\] \("Daily Cap"\)\.name: must be 1-64 characters of a-z/ },
  { why: "empty model", limits: [{ name: "m", metric: "tokens", max: 1, window: "day", model: "" }], says: /limits\[0\] \("m"\)\.model/ },
  { why: "gate out of range", limits: [{ name: "g", metric: "spend", max: 1, window: "day", hard_gate_at: 1.5 }], says: /limits\[0\] \("g"\)\.hard_gate_at: must be between 0 and 1/ },
  { why: "crossed gates", limits: [{ name: "g", metric: "spend", max: 1, window: "day", soft_gate_at: 0.9, hard_gate_at: 0.5 }], says: /limits\[0\] \("g"\)\.soft_gate_at: 0\.9 must not exceed hard_gate_at \(0\.5\)/ },
  {
    why: "more than 16",
    limits: Array.from({ length: 17 }, (_, i) => ({ name: `l${i}`, metric: "requests", max: 1, window: "minute" })),
    says: /limits: at most 16 per plan \(17 sent\)/,
  },
  { why: "unknown scope", limits: [{ name: "s", metric: "spend", max: 1, window: "day", scope: "org" }], says: /limits\[0\] \("s"\)\.scope: "org" is not one of team, member/ },
  { why: "unknown time zone", time_zone: "Mars/Olympus", says: /time_zone: "Mars\/Olympus" is not an IANA time zone name/ },
];

t("each invalid limit or time zone is 400 naming the limit and the field, on create and on PATCH", async ({ a }) => {
  const base = await a.post("/config/plans", { plans: [{ name: unique("target") }] });
  const id = base.body.plans[0].id;
  for (const c of INVALID) {
    const fields = { ...(c.limits ? { limits: c.limits } : {}), ...(c.time_zone ? { time_zone: c.time_zone } : {}) };
    const created = await a.post("/config/plans", { plans: [{ name: unique("bad"), ...fields }] });
    assert.is(created.status, 400, `${c.why}: ${JSON.stringify(created.body)}`);
    assert.match(created.body.detail, c.says, c.why);
    assert.match(created.body.detail, /^plans\[0\]\./, `${c.why}: the plan is named too`);
    const patched = await a.patch(`/config/plans/${id}`, fields);
    assert.is(patched.status, 400, `${c.why}: ${JSON.stringify(patched.body)}`);
    assert.match(patched.body.detail, c.says, c.why);
  }
  // Nothing was stored.
  const after = (await a.get("/config/plans")).body.plans;
  assert.not.ok(after.some((p: { name: string }) => p.name.startsWith("bad-")));
  assert.equal(after.find((p: { id: string }) => p.id === id).limits, []);
});

t("a limit missing a required field is 422 (a shape error, as for every body)", async ({ a }) => {
  const res = await a.post("/config/plans", { plans: [{ name: unique("x"), limits: [{ name: "a", metric: "spend", window: "day" }] }] });
  assert.is(res.status, 422, JSON.stringify(res.body));
  assert.match(res.body.detail, /limits\/0\/max is required/);
});

t("the OpenAPI document describes limits and time_zone", async ({ stack }) => {
  const doc = (await stack.api.get("/openapi.json")).body;
  const text = JSON.stringify(doc.paths["/api/v1/config/plans"]);
  for (const f of ["limits", "time_zone", "duration_minutes", "scope"]) assert.ok(text.includes(`"${f}"`), f);
});

t("a model cap reads 0 for a user whose usage named no model, and for a model named like an object's own property", async ({ a }) => {
  const caps = { "gpt-4o": { max_tokens_per_period: 1_000 }, constructor: { max_tokens_per_period: 10 }, "\r": { max_tokens_per_period: 5 } };
  const now = Date.now();
  const user = await userOnPlan(a, { max_spend_per_period: 10, model_limits: caps }, { period_start: new Date(now - 86_400_000).toISOString(), period_end: new Date(now + 29 * 86_400_000).toISOString() });
  // Usage with no model: the period's counter holds no model at all.
  assert.is((await a.post("/events", { user_id: user, cost: 0.5 })).status, 201);
  assert.is((await a.post("/events/batch", [{ id: randomUUID(), user_id: user, timestamp: new Date().toISOString(), cost_total: 0.25, tool_calls: ["search"] }])).status, 200);
  for (const path of [`/users/${user}/limits`, `/users/${user}/session`]) {
    const res = await a.get(path);
    assert.is(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
    const used = Object.fromEntries((res.body.limits as { reason: string; used: number }[]).map((d) => [d.reason, d.used]));
    assert.equal([used["model_limit:gpt-4o"], used["model_limit:constructor"], used["model_limit:\r"]], [0, 0, 0], path);
    assert.is(used.total_spend, 0.75, path);
  }
  // Then a call to a capped model: only its own cap counts it.
  assert.is((await a.post("/events/batch", [{ id: randomUUID(), user_id: user, timestamp: new Date().toISOString(), model: "gpt-4o", total_tokens: 40, cost_total: 0.1 }])).status, 200);
  const used = Object.fromEntries(((await a.get(`/users/${user}/limits`)).body.limits as { reason: string; used: number }[]).map((d) => [d.reason, d.used]));
  assert.equal([used["model_limit:gpt-4o"], used["model_limit:constructor"]], [40, 0]);
});

t.run();
