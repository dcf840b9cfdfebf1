// How a gate reaches people: gate events and their webhooks (one per kind of gate, never a
// hard gate hidden behind a soft one), messages, the JSON 429 of the Express and Fastify
// helpers, and session caps per conversation through one wrapped model client.
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import express from "express";
import Fastify from "fastify";
import OpenAI from "openai";
import * as assert from "uvu/assert";
import { FAST } from "../../../services/webhooks/testing/instance.ts";
import { Receiver } from "../../../services/webhooks/testing/receiver.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { LimitExceededError, Meter, MeterUnavailableError, type MeterOptions } from "../src/index.ts";
import { meterErrorHandler } from "../src/http/express.ts";
import { meterFastify } from "../src/http/fastify.ts";
import { meterOpenAI } from "../src/integrations/openai.ts";
import { setClock } from "../src/internal.ts";
import { startMockOpenAI } from "./mock-openai.ts";
import type { MockServer } from "./mock-server.ts";
import { createUser, DAY, gateEvents, rejects, stackMeter, stackSuite, type StackCtx } from "./support/fixtures.ts";

type Ctx = StackCtx & { rx: Receiver; mock: MockServer };
const t = stackSuite<{ rx: Receiver; mock: MockServer }>("sdk: gate events, webhooks, messages, HTTP helpers, conversations", "sdk gates", {
  stack: { services: { webhooks: FAST, ingestion: { relayIntervalMs: 50 } } },
  before: async (ctx) => {
    ctx.rx = await new Receiver().start();
    const types = ["gate_event.soft_gate", "gate_event.hard_gate", "gate_event.blocked"];
    assert.is((await ctx.api.post("/webhooks/endpoints", { url: ctx.rx.url, subscribed_events: types })).status, 201);
    ctx.mock = await startMockOpenAI();
    // Closed after the clients, as the proxies are.
    ctx.proxies.push(ctx.mock, { close: () => ctx.rx.stop() });
  },
});

// Flushes happen when a test asks.
const meter = (ctx: StackCtx, opts: MeterOptions = {}): Meter => stackMeter(ctx, { flushIntervalMs: 600_000, ...opts });

const RATES = { "gpt-4o": { input: 1, output: 2 } };
const webhooksOf = (rx: Receiver, userId: string) => rx.received.filter((r) => r.body.includes(userId)).map((r) => r.headers["x-service-event"]).sort();

t("soft, then hard, then blocked within 5 s: three gate events and their webhooks; suppressed repeats are counted", async (ctx) => {
  const plan = { max_spend_per_period: 1, cost_rates: RATES };
  const userId = await createUser(ctx.api, plan);
  // The same user seen by a replica that lets hard-gated calls through, and by one that blocks them.
  const lenient = meter(ctx, { blocking: false });
  const blocking = meter(ctx);
  // $0.80 then $0.20 (100 and 100 + 50 input/output tokens at $1 / $2 per 1K).
  for (let i = 0; i < 8; i++) await lenient.record(userId, { model: "gpt-4o", input_tokens: 100 });
  assert.is((await lenient.guard(userId, { model: "gpt-4o" })).status, "soft_gate");
  assert.is((await lenient.guard(userId, { model: "gpt-4o" })).status, "soft_gate");
  await lenient.record(userId, { model: "gpt-4o", input_tokens: 100, output_tokens: 50 });
  assert.is((await lenient.guard(userId, { model: "gpt-4o" })).status, "hard_gate");
  assert.ok(await lenient.flush());
  await blocking.refresh(userId);
  for (let i = 0; i < 4; i++) await rejects(() => blocking.guard(userId, { model: "gpt-4o" }), LimitExceededError);
  assert.ok(await blocking.flush());

  const rows = await eventually(async () => {
    const r = await gateEvents(ctx.api, userId);
    return r.length >= 3 ? r : null;
  }, 20_000, "three gate events");
  const kinds = rows.map((r) => `${r.status}${r.blocked ? "+blocked" : ""}`).sort();
  assert.equal(kinds, ["hard_gate", "hard_gate+blocked", "soft_gate"]);
  // The webhooks service sends one webhook per (user, reason, type) per window: both hard gates are one.
  await eventually(() => webhooksOf(ctx.rx, userId).length >= 3, 20_000, "the webhooks of the three gate events");
  assert.equal(webhooksOf(ctx.rx, userId), ["gate_event.blocked", "gate_event.hard_gate", "gate_event.soft_gate"]);

  // The 3 blocked calls after the first were not written; the next event of that kind, one window (5 s) later, says so.
  // The library's clock moves past the window: no sleep, and no race with a slow machine.
  setClock(() => Date.now() + 5_100);
  try {
    await rejects(() => blocking.guard(userId, { model: "gpt-4o" }), LimitExceededError);
  } finally {
    setClock();
  }
  assert.ok(await blocking.flush());
  const later = await eventually(async () => {
    const r = await gateEvents(ctx.api, userId);
    return r.length >= 4 ? r : null;
  }, 20_000, "the next blocked event");
  const counted = later.filter((r) => r.blocked && r.metadata?.suppressed_events !== undefined);
  assert.is(counted.length, 1, JSON.stringify(later));
  assert.is(counted[0].metadata.suppressed_events, 3);
});

t("a gate message says what was spent and what the call's estimate would add", async (ctx) => {
  const userId = await createUser(ctx.api, { max_spend_per_session: 0.5, cost_rates: RATES, pre_call_estimate: true, pre_call_buffer_tokens: 10 });
  const m = meter(ctx);
  // $0.48 spent in the session, then a call estimated at 20 input + 10 buffer tokens: $0.02 + $0.02.
  await m.record(userId, { model: "gpt-4o", input_tokens: 480 });
  const err = (await rejects(() => m.guard(userId, { model: "gpt-4o", input_tokens: 20 }), LimitExceededError)) as LimitExceededError;
  assert.is(err.message, "Session spend limit reached: $0.4800 of $0.50 spent (96%); this call's estimate of $0.0400 would bring it to $0.5200 (104%)");
  assert.is(err.result.gate_reason, "session_spend");
});

/** A user at its period cap ($1 spent of $1), and a fresh client for them. */
async function blockedCall(ctx: Ctx): Promise<{ m: Meter; userId: string; periodEnd: number }> {
  const end = Date.now() + 3 * DAY;
  const userId = await createUser(ctx.api, { max_spend_per_period: 1 }, { start: new Date(Date.now() - DAY), end: new Date(end) });
  assert.is((await ctx.api.post("/events", { user_id: userId, cost: 1 })).status, 201);
  return { m: meter(ctx), userId, periodEnd: end };
}

function check429(status: number, headers: Headers, body: any, periodEnd: number): void {
  assert.is(status, 429);
  assert.match(headers.get("content-type") ?? "", /application\/json/);
  assert.equal(Object.keys(body).sort(), ["current_value", "detail", "gate_reason", "limit_value", "resets_at", "usage_pct"]);
  assert.is(body.gate_reason, "total_spend");
  // The period cap lifts when the period ends.
  assert.is(body.resets_at, new Date(periodEnd).toISOString());
  assert.is(body.limit_value, 1);
  assert.match(body.detail, /Spend limit reached/);
  // Seconds to the period's end.
  const retryAfter = Number(headers.get("retry-after"));
  assert.ok(retryAfter > 0 && retryAfter <= Math.ceil((periodEnd - Date.now()) / 1000) + 1 && retryAfter > 2 * 86_400, `Retry-After ${retryAfter}`);
}

t("Express: meterErrorHandler answers a blocked call with JSON 429 and Retry-After; other errors go on", async (ctx) => {
  const { m, userId, periodEnd } = await blockedCall(ctx);
  const app = express();
  app.get("/chat", async (_req, res) => {
    await m.guard(userId, { model: "gpt-4o" });
    res.json({ ok: true });
  });
  app.get("/broken", () => {
    throw new Error("not a limit");
  });
  app.use(meterErrorHandler());
  app.use((err: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => void res.status(500).json({ other: err.message }));
  const server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const res = await fetch(`${base}/chat`);
    check429(res.status, res.headers, await res.json(), periodEnd);
    const other = await fetch(`${base}/broken`);
    assert.is(other.status, 500);
    assert.equal(await other.json(), { other: "not a limit" });
  } finally {
    server.close();
  }
});

t("Fastify: the meterFastify plugin answers a blocked call with JSON 429 and Retry-After; other errors keep Fastify's handler", async (ctx) => {
  const { m, userId, periodEnd } = await blockedCall(ctx);
  const app = Fastify();
  await app.register(meterFastify);
  app.get("/chat", async () => {
    await m.guard(userId, { model: "gpt-4o" });
    return { ok: true };
  });
  app.get("/broken", async () => {
    throw new Error("not a limit");
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  try {
    const res = await fetch(`${base}/chat`);
    check429(res.status, res.headers, await res.json(), periodEnd);
    // Fastify's own handler still answers everything else.
    const other = await fetch(`${base}/broken`);
    assert.is(other.status, 500);
    assert.is(((await other.json()) as { message: string }).message, "not a limit");
  } finally {
    await app.close();
  }
});

/** The answer to one GET /chat of an Express app whose handler guards `userId`, behind meterErrorHandler. */
async function expressChat(m: Meter, userId: string): Promise<Response> {
  const app = express();
  app.get("/chat", async (_req, res) => {
    await m.guard(userId, { model: "gpt-4o" });
    res.json({ ok: true });
  });
  app.use(meterErrorHandler());
  const server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  try {
    return await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/chat`);
  } finally {
    server.close();
  }
}

t("a cap of 0 (a cancelled plan): 429 naming the cap, no Retry-After, resets_at null: it never lifts by itself", async (ctx) => {
  const userId = await createUser(ctx.api, { max_spend_per_period: 0 });
  const res = await expressChat(meter(ctx), userId);
  assert.is(res.status, 429);
  assert.is(res.headers.get("retry-after"), null);
  const body = (await res.json()) as { gate_reason: string; limit_value: number; resets_at: string | null };
  assert.equal([body.gate_reason, body.limit_value, body.resets_at], ["total_spend", 0, null]);
});

t("failClosed during an outage: Express and Fastify answer 503 with Retry-After, saying metering is unavailable, not a limit", async (ctx) => {
  const userId = await createUser(ctx.api, { max_spend_per_period: 100 });
  // Nothing listens on port 9: every load is refused.
  const m = stackMeter(ctx, { baseURL: "http://127.0.0.1:9/api/v1", failClosed: true, startupTimeoutMs: 500 });
  const err = (await rejects(() => m.guard(userId, { model: "gpt-4o" }), MeterUnavailableError)) as MeterUnavailableError;
  assert.ok(err instanceof LimitExceededError, "code that catches blocked calls still catches it");
  assert.is(err.statusCode, 503);
  assert.match(err.message, /metering service is unavailable/);

  const check503 = async (res: Response) => {
    assert.is(res.status, 503);
    const body = (await res.json()) as { detail: string; gate_reason: string };
    assert.is(body.gate_reason, "session_unavailable");
    assert.match(body.detail, /metering service is unavailable/);
    assert.not.match(body.detail, /limit reached/);
    const after = Number(res.headers.get("retry-after"));
    assert.ok(after >= 1 && after <= 5, `Retry-After ${after}`);
  };
  await check503(await expressChat(m, userId));
  const f = Fastify();
  await f.register(meterFastify);
  f.get("/chat", async () => {
    await m.guard(userId, { model: "gpt-4o" });
    return { ok: true };
  });
  await f.listen({ port: 0, host: "127.0.0.1" });
  try {
    await check503(await fetch(`http://127.0.0.1:${(f.server.address() as AddressInfo).port}/chat`));
  } finally {
    await f.close();
  }
});

t("one wrapped OpenAI client serves two conversations, each capped by its own session", async (ctx) => {
  // $0.50 a session; each reply costs 100 input + 100 output tokens at $1 / $2 per 1K: $0.30.
  const userId = await createUser(ctx.api, { max_spend_per_session: 0.5, cost_rates: RATES });
  const m = meter(ctx);
  const openai = meterOpenAI(new OpenAI({ apiKey: "sk-test", baseURL: `${ctx.mock.url}/v1`, maxRetries: 0 }), m);
  ctx.mock.reply = { text: "Hi", usage: { input: 100, output: 100 } };
  const say = (conversation: string) =>
    m.withUser(userId, () => openai.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hello" }] }), { session_id: conversation });

  await say("conversation-a");
  await say("conversation-a");
  // $0.60 in conversation a: its next call is blocked; conversation b has spent nothing.
  await rejects(() => say("conversation-a"), LimitExceededError);
  await say("conversation-b");
  await say("conversation-b");
  await rejects(() => say("conversation-b"), LimitExceededError);
  assert.ok(await m.flush());
  const rows = await eventually(async () => {
    const r = await gateEvents(ctx.api, userId);
    return r.length >= 2 ? r : null;
  }, 20_000, "a blocked event per conversation");
  assert.equal(rows.map((r) => r.session_id).sort(), ["conversation-a", "conversation-b"]);
  // A session named by the call itself wins over the context's.
  assert.is((await m.withUser(userId, () => m.guard(userId, { session_id: "conversation-c" }), { session_id: "conversation-a" })).status, "ok");
});

t.run();
