// What the client learns from the service besides sessions: whether its key and address are
// right (start()), what happens when a session cannot be loaded (failClosed), and plan and
// subscription changes, which reach a running client by the product's change marker.
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import net, { type AddressInfo } from "node:net";
import * as assert from "uvu/assert";
import { eventually } from "../../../test/support/eventually.ts";
import http from "node:http";
import { LimitExceededError, Meter, MeterApiError, MeterAuthenticationError, MeterEventsDroppedError, MeterUnavailableError, type MeterOptions } from "../src/index.ts";
import { createPlan, createUser, DAY, rejects, stackMeter, stackSuite, type StackCtx, subscribe } from "./support/fixtures.ts";
import { FaultProxy } from "./support/proxy.ts";

const t = stackSuite<{ proxy: FaultProxy }>("sdk: start, failClosed, plan changes over HTTP", "sdk link", {
  before: async (ctx) => {
    // Counts requests by path; no faults.
    ctx.proxy = await FaultProxy.start(ctx.stack.apiUrl);
    ctx.proxies.push(ctx.proxy);
  },
});

/** A logger that keeps warnings and errors apart, and the errors onError saw. */
function recorder() {
  const log = { warnings: [] as string[], errors: [] as string[], reported: [] as Error[] };
  return {
    log,
    options: {
      logger: { warn: (m: string) => void log.warnings.push(m), error: (m: string) => void log.errors.push(m) },
      onError: (err: Error) => void log.reported.push(err),
    } satisfies MeterOptions,
  };
}

const meter = (ctx: StackCtx & { proxy: FaultProxy }, opts: MeterOptions = {}): Meter => stackMeter(ctx, { baseURL: ctx.proxy.apiUrl, ...opts });

const RATES = { "gpt-4o": { input: 1, output: 2 } };
const wrongKey = () => `mk_${randomBytes(32).toString("base64url")}`;

t("start() checks the key: accepted, and refused with an error naming the problem, sent to onError", async (ctx) => {
  assert.equal(await meter(ctx).start(), { healthy: true, authenticated: true });

  const { log, options } = recorder();
  const bad = meter(ctx, { apiKey: wrongKey(), ...options });
  assert.equal(await bad.start(), { healthy: true, authenticated: false });
  assert.is(log.errors.length, 1, JSON.stringify(log));
  assert.match(log.errors[0]!, /refused the API key \(401/);
  assert.match(log.errors[0]!, /METER_API_KEY/);
  assert.match(log.errors[0]!, /permissive defaults/);
  assert.instance(log.reported[0], MeterApiError);
  assert.is((log.reported[0] as MeterApiError).status, 401);

  // Without failClosed a user then runs on permissive defaults, as before; the refusal is not logged again per user.
  const userId = await createUser(ctx.api, { max_spend_per_period: 0 });
  assert.is((await bad.guard(userId)).status, "ok");
  assert.is(log.errors.length, 1);
});

t("failClosed: a user whose session cannot be loaded is hard-gated (key refused, service unreachable); an unknown user is not", async (ctx) => {
  const userId = await createUser(ctx.api, { max_spend_per_period: 100, cost_rates: RATES });
  const { log, options } = recorder();
  const refused = meter(ctx, { apiKey: wrongKey(), failClosed: true, ...options });
  assert.equal(await refused.start(), { healthy: true, authenticated: false });
  assert.match(log.errors[0]!, /hard-gated \(failClosed\)/);
  const hard: string[] = [];
  refused.onHardGate((r) => void hard.push(r.gate_reason!));
  const err = (await rejects(() => refused.guard(userId, { model: "gpt-4o" }), LimitExceededError)) as LimitExceededError;
  assert.is(err.result.gate_reason, "session_unavailable");
  assert.match(err.message, /could not be loaded/);
  assert.equal(hard, ["session_unavailable"]);
  // Nothing is queued for the service: it refused the key.
  assert.is(refused.stats.queued, 0);

  const down = meter(ctx, { baseURL: "http://127.0.0.1:9/api/v1", failClosed: true, startupTimeoutMs: 500 });
  assert.equal(await down.start(), { healthy: false, authenticated: false });
  await rejects(() => down.guard(userId), LimitExceededError);
  // The default fails open.
  const open = meter(ctx, { baseURL: "http://127.0.0.1:9/api/v1", startupTimeoutMs: 500 });
  assert.is((await open.guard(userId)).status, "ok");

  // The service answers and does not know the user: permissive defaults, failClosed or not.
  const closed = meter(ctx, { failClosed: true });
  assert.is((await closed.guard(`nobody-${Date.now()}`)).status, "ok");
  assert.is((await closed.guard(userId, { model: "gpt-4o" })).status, "ok");
});

t("a baseURL without /api/v1: refused when it has no path, explained when nothing answers; events are kept, not dropped", async (ctx) => {
  const origin = new URL(ctx.stack.apiUrl).origin;
  assert.throws(() => new Meter({ apiKey: ctx.apiKey, baseURL: origin }), (e: Error) => e instanceof TypeError && e.message.includes(`use ${origin}/api/v1`));
  assert.throws(() => new Meter({ apiKey: ctx.apiKey, baseURL: `${origin}/` }), /\/api\/v1/);

  const { log, options } = recorder();
  const m = meter(ctx, { baseURL: `${origin}/meter`, ...options });
  assert.equal(await m.start(), { healthy: false, authenticated: false });
  assert.match(log.errors[0]!, /nothing of the Meter API answers at .*\/meter \(GET .*\/health: 404\)/);
  assert.match(log.errors[0]!, /including \/api\/v1/);
  assert.ok(log.reported.length === 1);

  await m.record("someone", { model: "gpt-4o", input_tokens: 10 });
  assert.is(await m.flush({ timeoutMs: 3_000 }), false);
  assert.is(m.stats.rejected, 0, "a 404 of the batch route drops nothing");
  assert.is(m.stats.queued, 1);
  // Its user's session answered 404 too: not taken as an unregistered user, said as the wrong address it is.
  assert.ok(log.errors.some((l) => /GET .*\/meter\/users\/\{user_id\}\/session answered 404 and nothing of the Meter API answers.*including \/api\/v1/.test(l)), JSON.stringify(log.errors));
});

t("a dead port: start() says the connection was refused at the address, not that a health check timed out", async (ctx) => {
  // A port that was just free: nothing listens there.
  const server = net.createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;
  await new Promise((r) => server.close(r));
  const { log, options } = recorder();
  const m = meter(ctx, { baseURL: `http://127.0.0.1:${port}/api/v1`, ...options });
  assert.equal(await m.start(), { healthy: false, authenticated: false });
  assert.is(log.warnings.length, 1, JSON.stringify(log));
  assert.ok(log.warnings[0]!.includes(`connection refused at http://127.0.0.1:${port}/api/v1/health: is the service running`), log.warnings[0]);
  assert.not.match(log.warnings[0]!, /within/);
});

t("a baseURL ending in /v1 (the OpenAI habit) or in /api: the error asks 'did you mean …/api/v1?'", async (ctx) => {
  const origin = new URL(ctx.stack.apiUrl).origin;
  for (const wrong of [`${origin}/v1`, `${origin}/api`]) {
    const { log, options } = recorder();
    const m = meter(ctx, { baseURL: wrong, ...options });
    assert.equal(await m.start(), { healthy: false, authenticated: false });
    assert.ok(log.errors[0]?.includes(`did you mean ${origin}/api/v1? The API answers there`), JSON.stringify(log.errors));
    // Deliveries (for a client that never called start()) say the same.
    const { log: log2, options: options2 } = recorder();
    const n = meter(ctx, { baseURL: wrong, ...options2 });
    await n.record("someone", { model: "gpt-4o", input_tokens: 1 });
    assert.is(await n.flush({ timeoutMs: 3_000 }), false);
    assert.ok(log2.errors.some((l) => l.includes(`did you mean ${origin}/api/v1?`)), JSON.stringify(log2.errors));
  }
});

t("a baseURL of the API's form where something else answers 404 to every path: no user is taken as unregistered, failClosed holds, start() names the host", async (ctx) => {
  // What a wrong host or an ingress without the route answers: 404 with a JSON detail, to anything.
  const foreign = http.createServer((_req, res) => res.writeHead(404, { "content-type": "application/json" }).end('{"detail":"Not Found"}'));
  foreign.listen(0, "127.0.0.1");
  await once(foreign, "listening");
  try {
    const origin = `http://127.0.0.1:${(foreign.address() as AddressInfo).port}`;
    const { log, options } = recorder();
    const closed = meter(ctx, { baseURL: `${origin}/api/v1`, failClosed: true, ...options });
    await rejects(() => closed.guard("anyone", { model: "gpt-4o" }), MeterUnavailableError);
    assert.is(log.errors.length, 1, JSON.stringify(log.errors));
    assert.ok(log.errors[0]!.includes(`something answers at ${origin} but not the Meter API`), log.errors[0]);
    const { log: log2, options: options2 } = recorder();
    const started = meter(ctx, { baseURL: `${origin}/api/v1`, ...options2 });
    assert.equal(await started.start(), { healthy: false, authenticated: false });
    assert.ok(log2.errors[0]?.includes(`something answers at ${origin} but not the Meter API`), JSON.stringify(log2.errors));
    assert.not.ok(log2.errors[0]?.includes("undefined"), log2.errors[0]);
    await closed.shutdown({ timeoutMs: 100 });
    await started.shutdown({ timeoutMs: 100 });
  } finally {
    await new Promise((r) => foreign.close(r));
  }
});

t("a session's 404 while /health does not answer in time says nothing of the address: the load failed, as in an outage", async (ctx) => {
  // The API's /health is slow when a service is (the gateway waits up to 2 s for each): no verdict either way.
  const slow = http.createServer((req, res) => {
    if (req.url?.endsWith("/health")) return; // never answered
    res.writeHead(404, { "content-type": "application/json" }).end('{"detail":"user not found"}');
  });
  slow.listen(0, "127.0.0.1");
  await once(slow, "listening");
  try {
    const { log, options } = recorder();
    const m = meter(ctx, { baseURL: `http://127.0.0.1:${(slow.address() as AddressInfo).port}/api/v1`, failClosed: true, ...options });
    await rejects(() => m.guard("anyone", { model: "gpt-4o" }), MeterUnavailableError);
    assert.ok(log.warnings.some((w) => w.includes("loading the session of anyone failed")), JSON.stringify(log.warnings));
    assert.equal(log.errors, [], "not said to be a wrong address");
    await m.shutdown({ timeoutMs: 100 });
  } finally {
    slow.closeAllConnections();
    await new Promise((r) => slow.close(r));
  }
});

t("a refused key: events are not held silently; flush() rejects at once with MeterAuthenticationError, stats say why", async (ctx) => {
  const userId = await createUser(ctx.api, { max_spend_per_period: 100, cost_rates: RATES });
  const { log, options } = recorder();
  const m = meter(ctx, { apiKey: wrongKey(), ...options });
  await m.record(userId, { model: "gpt-4o", input_tokens: 10 });
  assert.is(log.errors.length, 1, JSON.stringify(log));
  assert.match(log.errors[0]!, /refused the API key \(401/);
  assert.instance(log.reported[0], MeterAuthenticationError);
  const started = Date.now();
  const err = (await rejects(() => m.flush({ timeoutMs: 600_000 }), MeterAuthenticationError)) as MeterAuthenticationError;
  assert.ok(Date.now() - started < 60_000, "it does not wait out the timeout (ten minutes)");
  assert.is(err.status, 401);
  assert.match(err.message, /1 events not delivered/);
  assert.ok(err instanceof MeterApiError);
  assert.equal({ queued: m.stats.queued, held: m.stats.held, key_refused: m.stats.key_refused }, { queued: 1, held: 1, key_refused: true });
  // shutdown() does not throw: it says why the events stay.
  const warned = log.warnings.length;
  assert.is(await m.shutdown({ timeoutMs: 1_000 }), false);
  assert.match(log.warnings.slice(warned).join("\n"), /1 events could not be delivered \(the API key is refused\)/);
  const lost = log.reported.at(-1);
  assert.instance(lost, MeterEventsDroppedError);
  assert.equal([(lost as MeterEventsDroppedError).reason, (lost as MeterEventsDroppedError).count], ["undelivered", 1]);
});

/** Spend $3 for the user through `m` and deliver it. */
async function spend3(m: Meter, userId: string): Promise<void> {
  // 1,500 input tokens at $1/1K, twice.
  for (let i = 0; i < 2; i++) await m.record(userId, { model: "gpt-4o", input_tokens: 1500 });
  assert.ok(await m.flush());
}

/** Calls guard() until the new cap gates it; the time from the change to that call (figures only, not asserted). */
async function gatedAfter(m: Meter, userId: string, changedAt: number, what: string): Promise<number> {
  return eventually(async () => {
    try {
      await m.guard(userId, { model: "gpt-4o" });
      return 0;
    } catch (err) {
      if (!(err instanceof LimitExceededError)) throw err;
      return Math.max(1, Date.now() - changedAt);
    }
  }, 30_000, what);
}

t("a plan change reaches a running client with default settings: the next calls are gated by the new cap; other users are not reloaded", async (ctx) => {
  const start = new Date(Date.now() - DAY);
  const end = new Date(Date.now() + 20 * DAY);
  const planId = await createPlan(ctx.api, { max_spend_per_period: 10, cost_rates: RATES });
  const userId = await createUser(ctx.api);
  await subscribe(ctx.api, userId, planId, start, end);
  const bystander = await createUser(ctx.api, { max_spend_per_period: 10, cost_rates: RATES });
  const m = meter(ctx);
  await m.start();
  await spend3(m, userId);
  assert.is((await m.guard(userId, { model: "gpt-4o" })).status, "ok");
  assert.is((await m.guard(bystander, { model: "gpt-4o" })).status, "ok");
  const bystanderReads = ctx.proxy.count(new RegExp(`GET /users/${bystander}/session`));

  const changedAt = Date.now();
  assert.is((await ctx.api.patch(`/config/plans/${planId}`, { max_spend_per_period: 2 })).status, 200);
  const ms = await gatedAfter(m, userId, changedAt, "a call gated by the lowered cap");
  console.log(`    plan change (PATCH /config/plans) to the first gated call, defaults: ${ms} ms`);
  assert.is(ctx.proxy.count(new RegExp(`GET /users/${bystander}/session`)), bystanderReads, "a user whose plan did not change is not reloaded");
  // One request per flush interval for the whole client, not one per user or per call.
  assert.ok(ctx.proxy.count(/GET \/config\/changes/) >= 1);

  // A subscription change too: the user moves to a plan that blocks everything.
  const closedPlan = await createPlan(ctx.api, { max_spend_per_period: 0 });
  const otherUser = await createUser(ctx.api, { max_spend_per_period: 10, cost_rates: RATES });
  assert.is((await m.guard(otherUser, { model: "gpt-4o" })).status, "ok");
  const subscribedAt = Date.now();
  await subscribe(ctx.api, otherUser, closedPlan, start, end);
  const subMs = await gatedAfter(m, otherUser, subscribedAt, "a call gated after the subscription change");
  console.log(`    subscription change to the first gated call, defaults: ${subMs} ms`);
});

t("a plan change with leases: true drops the lease's old grant; the next calls are gated by the new cap", async (ctx) => {
  const planId = await createPlan(ctx.api, { max_spend_per_period: 10, cost_rates: RATES, pre_call_estimate: true, pre_call_buffer_tokens: 100 });
  const userId = await createUser(ctx.api);
  await subscribe(ctx.api, userId, planId, new Date(Date.now() - DAY), new Date(Date.now() + 20 * DAY));
  const m = meter(ctx, { leases: true });
  await m.start();
  for (let i = 0; i < 3; i++) {
    await m.call(userId, { model: "gpt-4o", input_tokens: 10, usage: () => ({ input_tokens: 1000 }) }, () => "ran");
  }
  assert.ok(await m.flush());
  const changedAt = Date.now();
  assert.is((await ctx.api.patch(`/config/plans/${planId}`, { max_spend_per_period: 2 })).status, 200);
  const ms = await eventually(async () => {
    try {
      await m.call(userId, { model: "gpt-4o", input_tokens: 10, usage: () => ({ input_tokens: 1 }) }, () => "ran");
      return 0;
    } catch (err) {
      if (!(err instanceof LimitExceededError)) throw err;
      return Math.max(1, Date.now() - changedAt);
    }
  }, 30_000, "a leased call gated by the lowered cap");
  console.log(`    plan change to the first gated call, leases: true: ${ms} ms`);
});

t("meter.refresh(userId) reloads the user's view at once", async (ctx) => {
  const planId = await createPlan(ctx.api, { max_spend_per_period: 10, cost_rates: RATES });
  const userId = await createUser(ctx.api);
  await subscribe(ctx.api, userId, planId, new Date(Date.now() - DAY), new Date(Date.now() + 20 * DAY));
  // No flush tick during the test: only refresh() can bring the change.
  const m = meter(ctx, { flushIntervalMs: 600_000 });
  await spend3(m, userId);
  assert.is((await m.guard(userId, { model: "gpt-4o" })).status, "ok");
  assert.is((await ctx.api.patch(`/config/plans/${planId}`, { max_spend_per_period: 3.5, soft_gate_at: 0.5 })).status, 200);
  const state = await m.refresh(userId);
  assert.is(state.period_cost, 3);
  assert.is((await m.guard(userId, { model: "gpt-4o" })).status, "soft_gate");
  // A user not cached yet is loaded.
  const fresh = await createUser(ctx.api, { max_spend_per_period: 1 });
  assert.is((await m.refresh(fresh)).user_id, fresh);
});

t.run();
