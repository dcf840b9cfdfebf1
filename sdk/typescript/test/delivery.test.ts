import { execFile } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import * as assert from "uvu/assert";
import { eventually } from "../../../test/support/eventually.ts";
import { LimitExceededError, Meter, MeterError, MeterEventsDroppedError, type MeterOptions } from "../src/index.ts";
import { createUser, DAY, memoryLogger, near, rejects, stackMeter, stackSuite, type StackCtx, usage } from "./support/fixtures.ts";
import { FaultProxy } from "./support/proxy.ts";

const t = stackSuite("sdk: delivery and failing open over a faulty network", "sdk delivery", {
  stack: { services: { ingestion: { relayIntervalMs: 50 } } },
  timeoutMs: 1_000,
});

async function setup(ctx: StackCtx, opts: MeterOptions = {}) {
  const proxy = await FaultProxy.start(ctx.stack.apiUrl);
  ctx.proxies.push(proxy);
  const logger = memoryLogger();
  // A long flush interval: the tests drive delivery with flush().
  const m = stackMeter(ctx, { baseURL: proxy.apiUrl, logger, flushIntervalMs: 60_000, ...opts });
  return { proxy, m, logger };
}

const PLAN = { max_spend_per_period: 1000, cost_rates: { m: { input: 1, output: 1 } } };

async function recordMany(m: Meter, userId: string, n: number) {
  for (let i = 0; i < n; i++) await m.record(userId, { model: "m", input_tokens: 10 + i }); // $0.010 + i/1000
}
const expected = (n: number) => Array.from({ length: n }, (_, i) => (10 + i) / 1000).reduce((a, b) => a + b, 0);

t("5xx, 429 and 408 answers are retried with backoff until delivered; totals exact", async (ctx) => {
  const { proxy, m } = await setup(ctx);
  const userId = await createUser(ctx.api, PLAN);
  await recordMany(m, userId, 30);
  proxy.inject(/POST \/events\/batch/, { kind: "status", status: 503 }, 2);
  proxy.inject(/POST \/events\/batch/, { kind: "status", status: 429 }, 1);
  // A proxy that gave up waiting for the service: the batch may never have reached it.
  proxy.inject(/POST \/events\/batch/, { kind: "status", status: 408 }, 1);
  assert.ok(await m.flush({ timeoutMs: 30_000 }));
  assert.is(proxy.count(/POST \/events\/batch/), 5);
  assert.is(m.stats.sent, 30);
  await eventually(async () => near((await usage(ctx.api, userId)).total_cost, expected(30)));
});

t("an answer lost after the service stored the batch: the retry counts once", async (ctx) => {
  const { proxy, m } = await setup(ctx);
  const userId = await createUser(ctx.api, PLAN);
  await recordMany(m, userId, 25);
  proxy.inject(/POST \/events\/batch/, { kind: "lose" }, 1);
  assert.ok(await m.flush({ timeoutMs: 30_000 }));
  assert.is(proxy.count(/POST \/events\/batch/), 2);
  const u = await eventually(async () => {
    const x = await usage(ctx.api, userId);
    return near(x.total_cost, expected(25)) ? x : null;
  });
  assert.is(u.total_tokens, Array.from({ length: 25 }, (_, i) => 10 + i).reduce((a, b) => a + b, 0));
});

t("a batch too large for the service (413) goes again in halves: every event delivered once", async (ctx) => {
  const { proxy, m } = await setup(ctx);
  const userId = await createUser(ctx.api, PLAN);
  await recordMany(m, userId, 30);
  proxy.inject(/POST \/events\/batch/, { kind: "status", status: 413, body: { detail: "batch larger than 10 MiB; split it" } }, 2);
  assert.ok(await m.flush({ timeoutMs: 30_000 }));
  // 30 refused, 15 refused, then batches of at most 8 until the queue is empty: 8, 8, 8 and 6.
  assert.is(proxy.count(/POST \/events\/batch/), 6);
  assert.equal([m.stats.sent, m.stats.rejected], [30, 0]);
  await eventually(async () => near((await usage(ctx.api, userId)).total_cost, expected(30)));
});

t("an event recorded after shutdown() is said, and sent by the next shutdown() (a serverless handler's next invocation)", async (ctx) => {
  const { m, logger } = await setup(ctx);
  const userId = await createUser(ctx.api, PLAN);
  await recordMany(m, userId, 2);
  assert.ok(await m.shutdown());
  await m.record(userId, { model: "m", input_tokens: 10 });
  assert.equal([m.stats.sent, m.stats.dropped, m.stats.queued], [2, 0, 1]);
  assert.ok(logger.lines.some((l) => l.includes("recorded after shutdown()")), JSON.stringify(logger.lines));
  assert.ok(await m.shutdown());
  assert.equal([m.stats.sent, m.stats.queued], [3, 0]);
});

/** Runs `body` (after `m`, a Meter, is made) as a script of its own that ends when its event loop runs empty. */
async function runScript(ctx: StackCtx, body: string): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "meter-exit-"));
  const script = path.join(dir, "script.mts");
  const index = fileURLToPath(new URL("../src/index.ts", import.meta.url));
  await writeFile(
    script,
    `import { Meter } from ${JSON.stringify(index)};
const m = new Meter({ apiKey: ${JSON.stringify(ctx.apiKey)}, baseURL: ${JSON.stringify(ctx.stack.apiUrl)}, flushIntervalMs: 60_000 });
${body}
`,
  );
  await promisify(execFile)(process.execPath, ["--import", "tsx", script], { timeout: 30_000 });
}

t("a script that ends without shutdown() still delivers what it queued (beforeExit)", async (ctx) => {
  const userId = await createUser(ctx.api, PLAN);
  // Nothing else keeps the script alive: its loop runs empty right after the record, long before the flush interval.
  await runScript(ctx, `await m.record(${JSON.stringify(userId)}, { model: "m", input_tokens: 10 });`);
  await eventually(async () => near((await usage(ctx.api, userId)).total_cost, 0.01), 10_000, "the event delivered at exit");
});

t("an event recorded after shutdown() in a script that then ends is delivered at its exit", async (ctx) => {
  const userId = await createUser(ctx.api, PLAN);
  const user = JSON.stringify(userId);
  await runScript(ctx, `await m.record(${user}, { model: "m", input_tokens: 10 });\nawait m.shutdown();\nawait m.record(${user}, { model: "m", input_tokens: 20 });`);
  await eventually(async () => near((await usage(ctx.api, userId)).total_cost, 0.03), 10_000, "both events delivered");
});

t("a shutdown callback that records, in a script that records after its shutdown(), still ends: each event once", async (ctx) => {
  const userId = await createUser(ctx.api, PLAN);
  const user = JSON.stringify(userId);
  // The callback runs at each shutdown (the explicit one, then the exit's); its events go with that shutdown's flush.
  await runScript(
    ctx,
    `await m.record(${user}, { model: "m", input_tokens: 10 });\nm.onShutdown(() => void m.record(${user}, { model: "m", input_tokens: 20 }));\nawait m.shutdown();\nawait m.record(${user}, { model: "m", input_tokens: 30 });`,
  );
  await eventually(async () => near((await usage(ctx.api, userId)).total_cost, 0.08), 10_000, "10 + 20, then 30 + 20 at exit");
});

t("shutdown's timeout bounds a batch request the service does not answer", async (ctx) => {
  // A request timeout of ten minutes: a shutdown bounded by it instead of its own 1 s would take that long.
  const { proxy, m } = await setup(ctx, { requestTimeoutMs: 600_000 });
  const userId = await createUser(ctx.api, PLAN);
  await recordMany(m, userId, 2);
  let free!: () => void;
  const held = new Promise<void>((done) => (free = done));
  proxy.inject(/POST \/events\/batch/, { kind: "hold", until: () => held }, 1);
  const started = Date.now();
  assert.is(await m.shutdown({ timeoutMs: 1_000 }), false);
  const took = Date.now() - started;
  free();
  assert.ok(took < 60_000, `shutdown took ${took} ms`);
});

t("other 4xx are not retried: the batch is dropped and counted", async (ctx) => {
  const { proxy, m, logger } = await setup(ctx);
  const userId = await createUser(ctx.api, PLAN);
  await recordMany(m, userId, 3);
  proxy.inject(/POST \/events\/batch/, { kind: "status", status: 422, body: { detail: "bad" } }, 1);
  assert.ok(await m.flush({ timeoutMs: 5_000 }));
  assert.is(proxy.count(/POST \/events\/batch/), 1);
  assert.is(m.stats.rejected, 3);
  assert.ok(logger.lines.some((l) => l.includes("refused")));
});

t("a 422 that names events drops only those: the rest of their batch is delivered", async (ctx) => {
  const { proxy, m, logger } = await setup(ctx);
  // A model priced so high that one call's cost passes the service's bound of one event ($10^12):
  // the library prices by the plan and cannot tell; the service refuses that event by its index.
  const userId = await createUser(ctx.api, { cost_rates: { ...PLAN.cost_rates, huge: { input: 1e9, output: 0 } } });
  await m.record(userId, { model: "m", input_tokens: 10 });
  await m.record(userId, { model: "huge", input_tokens: 2_000_000 });
  await m.record(userId, { model: "m", input_tokens: 11 });
  assert.ok(await m.flush({ timeoutMs: 10_000 }));
  assert.is(proxy.count(/POST \/events\/batch/), 2);
  assert.is(m.stats.rejected, 1);
  assert.is(m.stats.sent, 2);
  assert.ok(logger.lines.some((l) => l.includes("refused 1 usage events")));
  const u = await eventually(async () => {
    const x = await usage(ctx.api, userId);
    return near(x.total_cost, 0.021) ? x : null;
  });
  assert.is(u.total_tokens, 21);
});

t("service down: start() settles, calls fail open, events wait in the queue; refused connections retried until totals are exact", async (ctx) => {
  const { proxy, m, logger } = await setup(ctx, { startupTimeoutMs: 1_000 });
  const userId = await createUser(ctx.api, { ...PLAN, max_spend_per_period: 0 });
  await proxy.down();
  assert.equal(await m.start(), { healthy: false, authenticated: false });
  // Unreachable: a user whose session cannot load gets permissive defaults, even on a cap of 0.
  const r = await m.guard(userId, { model: "m" });
  assert.is(r.status, "ok");
  assert.is(m.state(userId)!.service_user_id, null);
  await recordMany(m, userId, 12);
  assert.is(await m.flush({ timeoutMs: 300 }), false);
  assert.is(m.stats.queued, 12);
  // The proxy is down: nothing listens on its port, and the log says so rather than "timed out".
  assert.ok(logger.lines.some((l) => l.includes(`connection refused at ${proxy.apiUrl}/health`)), JSON.stringify(logger.lines));
  await proxy.up();
  assert.ok(await m.flush({ timeoutMs: 30_000 }));
  await eventually(async () => near((await usage(ctx.api, userId)).total_cost, expected(12)));
  // Once the view loads (retried in the background), the cap of 0 holds again.
  await eventually(async () => (await m.guard(userId, { model: "m" }).then(() => false, (e) => e instanceof LimitExceededError)), 20_000, "reload");
  assert.ok(m.state(userId)!.service_user_id);
});

t("tokens recorded before the first view add to the view's: the service had none of them yet", async (ctx) => {
  const { proxy, m } = await setup(ctx, { startupTimeoutMs: 500 });
  const userId = await createUser(ctx.api, PLAN);
  assert.is((await ctx.api.post("/events", { user_id: userId, model: "m", input_tokens: 500 })).status, 201);
  await proxy.down();
  await m.start();
  await m.record(userId, { model: "m", input_tokens: 1000 }); // held back until the view arrives
  await proxy.up();
  assert.ok(await m.flush({ timeoutMs: 30_000 }));
  const state = m.state(userId)!;
  assert.equal(state.period_tokens_by_model, { m: 1500 });
  assert.ok(near(state.period_cost, 1.5), String(state.period_cost));
  await eventually(async () => (await usage(ctx.api, userId)).total_tokens === 1500);
});

t("a full queue drops new events, counts them, logs once and tells onError", async (ctx) => {
  const reported: Error[] = [];
  const { proxy, m, logger } = await setup(ctx, { maxQueueSize: 5, onError: (err) => reported.push(err) });
  const userId = await createUser(ctx.api, PLAN);
  await m.guard(userId);
  await proxy.down();
  await recordMany(m, userId, 8);
  assert.is(m.stats.queued, 5);
  assert.is(m.stats.dropped, 3);
  assert.is(logger.lines.filter((l) => l.includes("queue full")).length, 1);
  const drops = reported.filter((e) => e instanceof MeterEventsDroppedError);
  assert.equal(
    drops.map((e) => [e.reason, e.count, e.message]),
    [["queue_full", 1, "event queue full (5); new events are dropped until it drains"]],
  );
  assert.ok(drops[0] instanceof MeterError);
  await proxy.up();
  assert.ok(await m.flush({ timeoutMs: 30_000 }));
  await eventually(async () => near((await usage(ctx.api, userId)).total_cost, expected(5)));
});

t("rollover while the service is unreachable: counters are cleared locally", async (ctx) => {
  const { proxy, m } = await setup(ctx, { startupTimeoutMs: 1_000 });
  // One reading of the clock: two could differ by a millisecond, and so would the period's length.
  const now = Date.now();
  const end = new Date(now + 1_500);
  const userId = await createUser(ctx.api, { max_spend_per_period: 0.01, cost_rates: { m: { input: 1, output: 1 } } }, { start: new Date(now - DAY), end });
  await m.record(userId, { model: "m", input_tokens: 10 });
  await rejects(() => m.guard(userId, { model: "m" }), LimitExceededError);
  await proxy.down();
  await eventually(() => Date.now() > end.getTime() + 10, 10_000);
  const r = await m.guard(userId, { model: "m" });
  assert.is(r.status, "ok");
  const s = m.state(userId)!;
  assert.is(s.period_cost, 0);
  assert.is(s.billing_period.start, end.toISOString());
  assert.is(Date.parse(s.billing_period.end) - Date.parse(s.billing_period.start), 1_500 + DAY);
  await proxy.up();
  await m.flush({ timeoutMs: 30_000 });
});

t("a service that keeps answering the ended period: the period rolled locally and what it counted stand, so its cap holds", async (ctx) => {
  const { proxy, m } = await setup(ctx, { startupTimeoutMs: 1_000, refreshIntervalMs: 200 });
  const now = Date.now();
  const end = new Date(now + 1_500);
  const userId = await createUser(ctx.api, { max_spend_per_period: 1, cost_rates: { m: { input: 1, output: 0 } } }, { start: new Date(now - DAY), end });
  // The session view as the service gives it now, answered from here on: a backend that gives no new dates.
  const view = await ctx.api.get(`/users/${userId}/session`);
  assert.is(view.status, 200);
  proxy.inject(/^GET \/users\/[^/]+\/session/, { kind: "status", status: 200, body: view.body }, 1_000);
  await eventually(() => Date.now() > end.getTime() + 10, 10_000);
  const sessions = () => proxy.count(/^GET \/users\/[^/]+\/session/);
  // Calls of $0.30 in the new period, each after a reload of the old view.
  for (let call = 0; call < 3; call++) {
    assert.ok((await m.guard(userId, { model: "m" })).status !== "hard_gate");
    await m.record(userId, { model: "m", input_tokens: 300 });
    // A call after the refresh interval reloads the view (the old period again) in the background.
    const before = sessions();
    await eventually(async () => (await m.guard(userId, { model: "m" }), sessions() > before), 10_000, "a reload");
  }
  const s = m.state(userId)!;
  assert.is(s.billing_period.start, end.toISOString());
  assert.ok(near(s.period_cost, 0.9), String(s.period_cost));
  await m.record(userId, { model: "m", input_tokens: 300 });
  await rejects(() => m.guard(userId, { model: "m" }), LimitExceededError);
});

t("shutdown delivers what is queued, usage and gate events", async (ctx) => {
  const { proxy, m } = await setup(ctx);
  const userId = await createUser(ctx.api, { ...PLAN, max_spend_per_period: 0.02 });
  await recordMany(m, userId, 2);
  await rejects(() => m.guard(userId, { model: "m" }), LimitExceededError);
  assert.ok(await m.shutdown());
  assert.is(m.stats.queued, 0);
  assert.is(proxy.count(/POST \/gate-events\/batch/), 1);
  await eventually(async () => near((await usage(ctx.api, userId)).total_cost, expected(2)));
});

t("a usage batch turned away (429) holds the gate batch back for its backoff; both go once it ends", async (ctx) => {
  const { proxy, m } = await setup(ctx);
  const userId = await createUser(ctx.api, { ...PLAN, max_spend_per_period: 0.02 });
  // The user's plan first, so that both usage events are priced and queued together (none held back).
  await m.guard(userId, { model: "m" });
  await recordMany(m, userId, 2);
  await rejects(() => m.guard(userId, { model: "m" }), LimitExceededError);
  const sent = () => [proxy.count(/POST \/events\/batch/), proxy.count(/POST \/gate-events\/batch/)];
  const [usageBefore, gatesBefore] = sent();
  proxy.inject(/POST \/events\/batch/, { kind: "status", status: 429, body: { detail: "busy; retry in 1 s" } }, 1);
  // A flush shorter than the backoff: the pass that met the 429 sends nothing more.
  assert.is(await m.flush({ timeoutMs: 200 }), false);
  assert.equal([sent()[0]! - usageBefore!, sent()[1]! - gatesBefore!], [1, 0]);
  assert.ok(await m.flush({ timeoutMs: 30_000 }));
  assert.equal([sent()[0]! - usageBefore!, sent()[1]! - gatesBefore!], [2, 1]);
  assert.is(m.stats.queued, 0);
});

t("metadata changed after record() is not what is sent: a value JSON cannot carry, added later, holds nothing back", async (ctx) => {
  const { m } = await setup(ctx);
  const userId = await createUser(ctx.api, PLAN);
  const metadata: Record<string, unknown> = { step: 1, nested: { n: 1 } };
  const event = await m.record(userId, { model: "m", input_tokens: 10, metadata });
  metadata.big = 10n;
  (metadata.nested as Record<string, unknown>).n = 2;
  assert.equal(event.metadata, { step: 1, nested: { n: 1 } }, "the event keeps what was recorded");
  assert.ok(await m.flush({ timeoutMs: 10_000 }));
  assert.equal([m.stats.sent, m.stats.queued], [1, 0]);
});

t.run();
