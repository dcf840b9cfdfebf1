import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Db, MongoClient } from "mongodb";
import type { Api } from "../../test/support/http.ts";
import { gateEventJson, sendEvents, usageJson, userOnPlan } from "../../test/support/rest.ts";
import { withTestStack, type TestStack } from "../../test/support/stack.ts";

/**
 * A plan of $0.10/day + $1/month + $0.50 over a rolling 5 hours + 5 requests/minute in New
 * York time, through the gateway: events land in the windows of their timestamps, the list of
 * GET /users/{id}/limits (and the session view's) says used, pct, window_start and resets_at,
 * a rolling window releases spend as it ages out, and a replayed batch counts nothing twice.
 * Ingestion's clock is the test's: the 15th of last month, noon in New York.
 */
const t = suite<{ stack: TestStack; api: Api; productId: string; mongo: MongoClient; db: Db }>("GET /users/{user_id}/limits over HTTP");

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const ZONE = "America/New_York";

/** Midnight of a calendar day in New York, found without the code under test (Intl only). */
function nyMidnight(y: number, m: number, d: number): number {
  for (const offsetHours of [5, 4]) {
    const t = Date.UTC(y, m, d, offsetHours);
    const parts = new Intl.DateTimeFormat("en-US", { timeZone: ZONE, hourCycle: "h23", day: "numeric", hour: "numeric" }).formatToParts(t);
    if (Number(parts.find((p) => p.type === "hour")!.value) === 0 && Number(parts.find((p) => p.type === "day")!.value) === d) return t;
  }
  throw new Error("no midnight found");
}

const today = new Date();
const Y = today.getUTCMonth() === 0 ? today.getUTCFullYear() - 1 : today.getUTCFullYear();
const M = (today.getUTCMonth() + 11) % 12;
const DAY_START = nyMidnight(Y, M, 15);
const NEXT_MIDNIGHT = nyMidnight(Y, M, 16);
const MONTH_START = nyMidnight(Y, M, 1);
const NEXT_MONTH = nyMidnight(M === 11 ? Y + 1 : Y, (M + 1) % 12, 1);
/** Noon in New York, on the minute; NOW is 30 s into that minute. */
const NOON = DAY_START + 12 * HOUR;
const NOW = NOON + 30_000;
let clock = NOW;

const PLAN = {
  time_zone: ZONE,
  limits: [
    { name: "daily", metric: "spend", max: 0.1, window: "day" },
    { name: "monthly", metric: "spend", max: 1, window: "month" },
    { name: "five-hours", metric: "spend", max: 0.5, window: "rolling", duration_minutes: 300 },
    { name: "rpm", metric: "requests", max: 5, window: "minute" },
  ],
};

withTestStack(t, { services: { ingestion: { now: () => new Date(clock) } } });
t.before(async (ctx) => {
  ({ api: ctx.api, productId: ctx.productId } = await ctx.stack.newProduct("Windows"));
  ctx.db = ctx.mongo.db(`${ctx.stack.dbPrefix}_ingestion`);
});

const usage = (user: string, at: number, cost: number) => usageJson(user, cost, { timestamp: new Date(at).toISOString() });

async function limits(api: Api, user: string): Promise<Record<string, any>> {
  const res = await api.get(`/users/${user}/limits`);
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.is(res.body.user_id, user);
  return Object.fromEntries(res.body.limits.map((d: { reason: string }) => [d.reason, d]));
}

const iso = (ms: number) => new Date(ms).toISOString();
const near = (a: number, b: number, what: string) => assert.ok(Math.abs(a - b) < 1e-9, `${what}: ${a} != ${b}`);

t("events land in the windows of their timestamps; a late one in its own; a replay counts nothing twice", async ({ api }) => {
  clock = NOW;
  const user = await userOnPlan(api, PLAN);
  const batch = [
    usage(user, NOON - HOUR, 0.04), // an hour ago: today, this month, the rolling window; not this minute
    usage(user, NOON + 10_000, 0.01), // this minute
    usage(user, NOON + 20_000, 0.01), // this minute
  ];
  await sendEvents(api, batch);
  // Late: 01:00 this morning, sent now: counts in today and this month, not in the last 5 hours nor this minute.
  await sendEvents(api, [usage(user, DAY_START + HOUR, 0.02)]);

  const check = async () => {
    const l = await limits(api, user);
    assert.equal(Object.keys(l), ["limit:daily", "limit:monthly", "limit:five-hours", "limit:rpm"], "plan order; no SPEC dimension without its cap");
    const daily = l["limit:daily"];
    near(daily.used, 0.08, "daily used");
    near(daily.pct, 0.8, "daily pct");
    assert.is(daily.window_start, iso(DAY_START));
    assert.is(daily.resets_at, iso(NEXT_MIDNIGHT), "the next midnight in New York");
    assert.is(daily.metric, "spend");
    assert.is(daily.window, "day");
    assert.is(daily.name, "daily");
    assert.is(daily.scope, "user");
    assert.is(daily.soft_gate_at, 0.8);
    assert.is(daily.hard_gate_at, 1);
    assert.is(daily.buckets, null);
    const monthly = l["limit:monthly"];
    near(monthly.used, 0.08, "monthly used");
    assert.is(monthly.window_start, iso(MONTH_START));
    assert.is(monthly.resets_at, iso(NEXT_MONTH));
    const rolling = l["limit:five-hours"];
    near(rolling.used, 0.06, "rolling used");
    assert.is(rolling.window_start, null);
    assert.is(rolling.duration_minutes, 300);
    // Buckets of 300 s: the hour-old call's and this minute's two.
    assert.equal(rolling.buckets.map((b: { start: string }) => b.start), [iso(NOON - HOUR), iso(NOON)]);
    near(rolling.buckets[1].used, 0.02, "this bucket");
    // Below the hard gate: it resets when the oldest call ages out (its bucket's end + 5 h).
    assert.is(rolling.resets_at, iso(NOON - HOUR + 5 * MINUTE + 5 * HOUR));
    const rpm = l["limit:rpm"];
    assert.is(rpm.used, 2);
    near(rpm.pct, 0.4, "rpm pct");
    assert.is(rpm.window_start, iso(NOON));
    assert.is(rpm.resets_at, iso(NOON + MINUTE));
    return l;
  };
  const first = await check();

  // The same batch again (a client's retry): every event is a duplicate, nothing moves.
  const replay = await sendEvents(api, batch);
  assert.is(replay.accepted, 0, JSON.stringify(replay));
  assert.equal(await check(), first);

  // The session view carries the same list and the plan's definitions.
  const session = await api.get(`/users/${user}/session`);
  assert.is(session.status, 200, JSON.stringify(session.body));
  assert.equal(Object.fromEntries(session.body.limits.map((d: { reason: string }) => [d.reason, d])), first);
  assert.is(session.body.plan_config.time_zone, ZONE);
  assert.equal(session.body.plan_config.limits.map((l: { name: string }) => l.name), ["daily", "monthly", "five-hours", "rpm"]);
  assert.is(session.body.plan_config.limits[2].duration_minutes, 300);
});

t("a rolling window releases spend as it ages out; calendar windows hold theirs until they end", async ({ api, db, productId }) => {
  clock = NOW;
  const user = await userOnPlan(api, PLAN);
  await sendEvents(api, [usage(user, NOON - 2 * HOUR, 0.3), usage(user, NOON, 0.25)]);
  let l = await limits(api, user);
  near(l["limit:five-hours"].used, 0.55, "both calls");
  assert.is(l["limit:five-hours"].pct, 1.1);
  // At the hard gate: it lifts when the older call ages out.
  assert.is(l["limit:five-hours"].resets_at, iso(NOON - 2 * HOUR + 5 * MINUTE + 5 * HOUR));

  clock = NOON - 2 * HOUR + 5 * MINUTE + 5 * HOUR; // 3h05 later
  l = await limits(api, user);
  near(l["limit:five-hours"].used, 0.25, "the older call aged out");
  assert.equal(l["limit:five-hours"].buckets.map((b: { start: string }) => b.start), [iso(NOON)]);
  near(l["limit:daily"].used, 0.55, "the day still holds both");
  assert.is(l["limit:rpm"].used, 0, "a new minute");

  clock = NOON + 5 * MINUTE + 5 * HOUR;
  l = await limits(api, user);
  assert.is(l["limit:five-hours"].used, 0);
  assert.is(l["limit:five-hours"].resets_at, null, "nothing counts");
  assert.equal(l["limit:five-hours"].buckets, []);

  // Next day in New York: the day is new, the month is not; the next call drops what ended.
  clock = NEXT_MIDNIGHT + HOUR + 30_000;
  await sendEvents(api, [usage(user, clock - 10_000, 0.01)]);
  l = await limits(api, user);
  near(l["limit:daily"].used, 0.01, "a new day");
  assert.is(l["limit:daily"].window_start, iso(NEXT_MIDNIGHT));
  near(l["limit:monthly"].used, 0.56, "the month goes on");
  const doc = await db.collection("counters").findOne({ _id: `${productId}|w|${user}` as never });
  const ends = Object.values((doc as unknown as { w: Record<string, { e: number }> }).w).map((v) => Number(v.e));
  assert.is(ends.length, 4, "one entry per window: the day, the month, one bucket, the minute");
  for (const e of ends) assert.ok(e > clock, "no entry of an ended window or aged-out bucket is kept");
});

t("SPEC's caps come first; unknown users are 404; ingest keys read it; limit:<name> gate events are accepted", async ({ stack, api }) => {
  clock = NOW;
  const user = await userOnPlan(api, {
    max_spend_per_period: 10,
    max_spend_per_session: 2,
    model_limits: { "gpt-4o": { max_tokens_per_period: 1000 } },
    limits: [{ name: "zero", metric: "requests", max: 0, window: "hour" }],
  }, { period_start: iso(MONTH_START), period_end: iso(NEXT_MONTH) });
  await sendEvents(api, [usage(user, NOW - 10_000, 3)]);
  const list = (await api.get(`/users/${user}/limits`)).body.limits;
  assert.equal(list.map((d: { reason: string }) => d.reason), ["total_spend", "session_spend", "model_limit:gpt-4o", "limit:zero"]);
  const [total, session, model, zero] = list;
  assert.is(total.used, 3);
  assert.is(total.window, "period");
  assert.is(total.window_start, iso(MONTH_START));
  assert.is(total.resets_at, iso(NEXT_MONTH));
  assert.is(session.window, "session");
  assert.is(session.used, 0);
  assert.is(session.resets_at, null);
  assert.is(model.used, 15);
  assert.is(model.model, "gpt-4o");
  assert.is(zero.used, 1);
  assert.is(zero.pct, 1, "max 0");
  assert.is(zero.resets_at, null, "a limit of 0 never lets a call through");

  assert.is((await api.get("/users/nobody-here/limits")).status, 404);
  const ingestKey = await api.post("/keys", { name: "ingest", scope: "ingest" });
  assert.is(ingestKey.status, 201, JSON.stringify(ingestKey.body));
  assert.is((await stack.api.withKey(ingestKey.body.key).get(`/users/${user}/limits`)).status, 200);
  assert.is((await stack.api.get(`/users/${user}/limits`)).status, 401);

  const gate = gateEventJson(user, { timestamp: iso(NOW - 5_000), status: "hard_gate", gate_reason: "limit:daily", usage_pct: 1, current_value: 0.1, limit_value: 0.1, blocked: true });
  const res = await api.post("/gate-events/batch", [gate]);
  assert.ok(res.status === 200 || res.status === 202, JSON.stringify(res.body));
  const listed = await api.get(`/users/${user}/gate-events?gate_reason=limit:daily`);
  assert.equal(listed.body.events.map((e: { gate_reason: string }) => e.gate_reason), ["limit:daily"]);
  const bad = await api.post("/gate-events/batch", [{ ...gate, id: randomUUID(), gate_reason: "limit:Not Valid" }]);
  assert.is(bad.status, 422);
});

t.run();
