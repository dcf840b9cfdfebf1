// The bounded ingestion queue end to end: an all-in-one process started with a small
// INGESTION_MAX_EVENTS_IN_FLIGHT (env, read by its config loader), clients of the TypeScript
// library sending faster than it stores. The service refuses what it cannot hold with 429 and
// Retry-After, the clients back off and send again, and every event is counted exactly once.
import { randomBytes, randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Meter, MeterApiError } from "../sdk/typescript/src/index.ts";
import { testMongoUrl } from "./support/database.ts";
import { eventually } from "./support/eventually.ts";
import type { Api } from "./support/http.ts";
import { startAllInOne, type AllInOne } from "./support/processes.ts";

interface Ctx {
  aio: AllInOne;
  api: Api;
  key: string;
  meters: Meter[];
}
const t = suite<Ctx>("bounded ingestion queue: 429 with Retry-After beyond the bound, clients back off, nothing lost or counted twice");

/** Events of batches the process holds at once: one batch of BATCH, so two at once are one too many. */
const BOUND = 100;
const BATCH = 100;
const CLIENTS = 6;
const DAY = 86_400_000;

t.before(async (ctx) => {
  ctx.aio = await startAllInOne({
    MONGODB_URL: await testMongoUrl(),
    MONGODB_DB_PREFIX: `q${randomBytes(4).toString("hex")}`,
    INGESTION_MAX_EVENTS_IN_FLIGHT: String(BOUND),
  });
  ctx.key = (await ctx.aio.api.post("/products", { name: "bounded queue" })).body.api_key;
  ctx.api = ctx.aio.api.withKey(ctx.key);
  ctx.meters = [];
});
t.after(async (ctx) => {
  for (const m of ctx.meters) await m.shutdown({ timeoutMs: 1_000 });
  await ctx.aio?.proc.stop();
});

/** One series of the process's Prometheus text (served beside its RPCs), summed over its labels. */
async function metric(ctx: Ctx, name: string): Promise<number> {
  const text = await (await fetch(`${ctx.aio.rpcBase}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

t("clients faster than the store get 429s with Retry-After, back off, and every event counts exactly once", async (ctx) => {
  const planId = (
    await ctx.api.post("/config/plans", { plans: [{ name: "metered", max_spend_per_period: 1_000_000, cost_rates: { m: { input: 1, output: 2 } } }] })
  ).body.plans[0].id;
  const start = new Date(Date.now() - DAY).toISOString();
  const end = new Date(Date.now() + 20 * DAY).toISOString();
  const busyErrors: MeterApiError[] = [];
  const clients = await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      const userId = `u-${randomUUID()}`;
      assert.is((await ctx.api.post("/users", { external_user_id: userId })).status, 201);
      assert.is((await ctx.api.post(`/users/${userId}/subscription`, { plan_id: planId, period_start: start, period_end: end })).status, 200);
      // Delivery driven by flush(): every client sends its batches at the same moment.
      const m = new Meter({
        apiKey: ctx.key,
        baseURL: `${ctx.aio.base}/api/v1`,
        logger: { warn: () => {} },
        onError: (err) => {
          if (err instanceof MeterApiError && err.status === 429) busyErrors.push(err);
        },
        flushIntervalMs: 3_600_000,
        maxBatchSize: BATCH,
        maxQueueSize: 100_000,
      });
      ctx.meters.push(m);
      return { m, userId, tokens: 0, cost: 0, events: 0 };
    }),
  );

  // Rounds of CLIENTS x 3 batches flushed at once, until the service has refused some (the first
  // round nearly always does: it holds one batch, six arrive together).
  for (let round = 0; round < 10 && clients.every((c) => c.m.stats.busy === 0); round++) {
    for (const c of clients) {
      for (let i = 0; i < 3 * BATCH; i++) {
        const input = 1 + ((c.events * 7) % 500);
        const output = 1 + ((c.events * 3) % 200);
        await c.m.record(c.userId, { model: "m", input_tokens: input, output_tokens: output });
        c.tokens += input + output;
        c.cost += input * 1 + output * 2; // thousandths of a dollar
        c.events++;
      }
    }
    const drained = await Promise.all(clients.map((c) => c.m.flush({ timeoutMs: 300_000 })));
    assert.equal(drained, clients.map(() => true), "every queue drained");
  }

  // The positive signal: refusals seen by the clients (stats, onError) and counted by the service.
  const busy = clients.reduce((n, c) => n + c.m.stats.busy, 0);
  assert.ok(busy > 0, "some batch was answered 429");
  assert.ok(busyErrors.length > 0, "onError was told of the 429");
  for (const err of busyErrors) assert.ok(err.retryAfterMs !== undefined && err.retryAfterMs >= 1_000 && err.retryAfterMs <= 60_000, `Retry-After ${err.retryAfterMs} ms`);
  assert.ok((await metric(ctx, "meter_ingestion_busy_refusals_total")) >= 1, "meter_ingestion_busy_refusals_total counts the refusals");
  assert.is(await metric(ctx, "meter_ingestion_in_flight_events"), 0, "nothing held once the clients drained");

  // Nothing lost, nothing counted twice: per user, and in the product's totals.
  let events = 0;
  let tokens = 0;
  for (const c of clients) {
    assert.equal([c.m.stats.queued, c.m.stats.sent, c.m.stats.dropped, c.m.stats.rejected], [0, c.events, 0, 0]);
    const u = (await ctx.api.get(`/users/${c.userId}/usage`)).body;
    assert.is(u.total_tokens, c.tokens);
    assert.ok(Math.abs(u.total_cost - c.cost / 1000) < 1e-9, `${u.total_cost} != ${c.cost / 1000}`);
    events += c.events;
    tokens += c.tokens;
  }
  await eventually(
    async () => {
      const s = (await ctx.api.get("/analytics/summary?days=1")).body;
      return s.total_events === events && s.total_tokens === tokens ? s : undefined;
    },
    180_000,
    `analytics to count ${events} events and ${tokens} tokens`,
  );
});

t.run();
