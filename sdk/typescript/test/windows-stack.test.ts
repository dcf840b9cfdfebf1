// A plan's windows through the real stack: the client counts each call in every window, blocks
// on the one at its cap with its reason and reset (the error, the Express 429 with Retry-After),
// rolls the window at its reset without a reload, and a fresh client finds the service's count
// in the session view. The client's and ingestion's clocks are the test's (fixed times, moved
// past a reset), so nothing waits for a minute or a midnight to pass.
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import express from "express";
import * as assert from "uvu/assert";
import { LimitExceededError, Meter } from "../src/index.ts";
import { meterErrorHandler } from "../src/http/express.ts";
import { setClock } from "../src/internal.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { createUser, DAY, gateEvents, rejects, stackMeter, stackSuite, type StackCtx } from "./support/fixtures.ts";

let clock = Date.now();
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

const t = stackSuite("sdk: windows and rate limits against the real stack", "sdk windows", {
  stack: { services: { ingestion: { now: () => new Date(clock) } } },
  before: () => setClock(() => clock),
  after: () => setClock(),
});

const meter = (ctx: StackCtx): Meter => stackMeter(ctx, { flushIntervalMs: 600_000 });

t("a 5-request/minute limit blocks the sixth call of a minute (here and in a fresh client), and the next minute runs", async (ctx) => {
  clock = Math.floor(Date.now() / MINUTE) * MINUTE + 10_000;
  const minuteEnd = Math.floor(clock / MINUTE) * MINUTE + MINUTE;
  const userId = await createUser(ctx.api, { limits: [{ name: "rpm", metric: "requests", max: 5, window: "minute" }] });
  const m = meter(ctx);
  let ran = 0;
  const chat = () => m.call(userId, { usage: () => ({ input_tokens: 10 }) }, () => ran++);
  for (let i = 0; i < 5; i++) {
    await chat();
    clock += 1_000;
  }
  const err = (await rejects(chat, LimitExceededError)) as LimitExceededError;
  assert.is(ran, 5);
  assert.is(err.reason, "limit:rpm");
  assert.is(err.result.gate_reason, "limit:rpm");
  assert.is(err.result.current_value, 6);
  assert.is(err.resetsAt?.getTime(), minuteEnd);

  // Another process: what it knows of the minute comes from the service's session view.
  assert.ok(await m.flush({ timeoutMs: 20_000 }));
  // The gate event names the blocking window with its figures.
  const events = await eventually(async () => {
    const r = await gateEvents(ctx.api, userId);
    return r.some((g) => g.blocked) ? r : null;
  }, 20_000, "the blocked call's gate event");
  const hard = events.find((g) => g.blocked)!;
  assert.equal([hard.gate_reason, hard.current_value, hard.limit_value, hard.usage_pct], ["limit:rpm", 6, 5, 1.2]);
  const other = meter(ctx);
  const blocked = (await rejects(() => other.guard(userId), LimitExceededError)) as LimitExceededError;
  assert.is(blocked.reason, "limit:rpm");

  clock = minuteEnd;
  await chat();
  assert.is(ran, 6);
  assert.is((await other.guard(userId)).status, "ok");
});

t("a $0.10/day + $1/month plan blocks on the day cap with limit:daily and Retry-After at the next midnight of the plan's time zone, and runs again after it", async (ctx) => {
  // 20:00 in Tokyo (UTC+9, no daylight saving) = 11:00 UTC: the latest one before now; the next midnight there is 15:00 UTC.
  const now = Date.now();
  const today11 = Math.floor(now / DAY) * DAY + 11 * HOUR;
  const t0 = today11 <= now ? today11 : today11 - DAY;
  const midnight = t0 + 4 * HOUR;
  clock = t0;
  const plan = {
    cost_rates: { m: { input: 1, output: 0 } },
    time_zone: "Asia/Tokyo",
    limits: [
      { name: "daily", metric: "spend", max: 0.1, window: "day" },
      { name: "monthly", metric: "spend", max: 1, window: "month" },
    ],
  };
  const userId = await createUser(ctx.api, plan, { start: new Date(t0 - 2 * DAY), end: new Date(t0 + 20 * DAY) });
  const m = meter(ctx);
  const app = express();
  // Each call: 40 input tokens at $1 per 1K, $0.04.
  app.post("/chat", async (_req, res) => res.json(await m.call(userId, { model: "m", input_tokens: 40, usage: () => ({ input_tokens: 40 }) }, () => ({ ok: true }))));
  app.use(meterErrorHandler());
  const server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  const chat = () => fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/chat`, { method: "POST" });
  try {
    for (let i = 0; i < 3; i++) {
      assert.is((await chat()).status, 200, `call ${i + 1}`);
      clock += MINUTE;
    }
    // $0.12 spent today: the day cap blocks, the month's ($0.12 of $1) does not.
    const res = await chat();
    assert.is(res.status, 429);
    const body = (await res.json()) as Record<string, unknown>;
    assert.is(body.gate_reason, "limit:daily");
    assert.is(body.current_value, 0.12);
    assert.is(body.limit_value, 0.1);
    assert.is(body.resets_at, new Date(midnight).toISOString());
    assert.is(Number(res.headers.get("retry-after")), (midnight - clock) / 1000);

    // The service counted the same: GET /users/{id}/limits, as a product's server reads it.
    assert.ok(await m.flush({ timeoutMs: 20_000 }));
    const limits = (await ctx.api.get(`/users/${userId}/limits`)).body.limits as { reason: string; used: number; resets_at: string }[];
    const daily = limits.find((l) => l.reason === "limit:daily")!;
    assert.equal([daily.used, daily.resets_at], [0.12, new Date(midnight).toISOString()]);

    // Past midnight in Tokyo the day starts over, without a reload; the month keeps counting.
    clock = midnight + MINUTE;
    assert.is((await chat()).status, 200);
    assert.ok(await m.flush({ timeoutMs: 20_000 }));
    const after = (await ctx.api.get(`/users/${userId}/limits`)).body.limits as { reason: string; used: number; window_start: string }[];
    const day = after.find((l) => l.reason === "limit:daily")!;
    assert.equal([day.used, day.window_start], [0.04, new Date(midnight).toISOString()]);
    const month = after.find((l) => l.reason === "limit:monthly")!;
    // 0.16 unless that midnight also began a month in Tokyo (UTC+9), where only the new call counts.
    const monthBegan = new Date(midnight + 9 * HOUR).getUTCDate() === 1;
    assert.is(month.used, monthBegan ? 0.04 : 0.16);
  } finally {
    server.close();
  }
});

t("a rolling 5-hour window releases spend as it ages out, without a reload; a fresh client gets its buckets from the session view", async (ctx) => {
  const FIVE = 5 * MINUTE;
  clock = Math.floor(Date.now() / FIVE) * FIVE + 5_000;
  const firstBucket = clock - 5_000;
  const userId = await createUser(ctx.api, {
    cost_rates: { m: { input: 1, output: 0 } },
    limits: [{ name: "five-hours", metric: "spend", max: 0.1, window: "rolling", duration_minutes: 300 }],
  });
  const m = meter(ctx);
  const chat = () => m.call(userId, { model: "m", input_tokens: 40, usage: () => ({ input_tokens: 40 }) }, () => "ok");
  // $0.04 now, in an hour and in two hours (three buckets of 5 minutes).
  for (let i = 0; i < 3; i++) {
    await chat();
    clock += HOUR;
  }
  clock -= HOUR - MINUTE;
  const err = (await rejects(chat, LimitExceededError)) as LimitExceededError;
  assert.is(err.reason, "limit:five-hours");
  // Below the cap once the first call's bucket leaves the window: its start + 5 minutes + 5 hours.
  const release = firstBucket + FIVE + 5 * HOUR;
  assert.is(err.resetsAt?.getTime(), release);
  clock = release - 1;
  await rejects(chat, LimitExceededError);
  clock = release;
  assert.is(await chat(), "ok");

  // A fresh client sums the buckets the service still counts: $0.12 again, blocked.
  assert.ok(await m.flush({ timeoutMs: 20_000 }));
  const blocked = (await rejects(() => meter(ctx).guard(userId, { model: "m" }), LimitExceededError)) as LimitExceededError;
  assert.is(blocked.reason, "limit:five-hours");
  assert.is(blocked.result.current_value, 0.12);
});

t.run();
