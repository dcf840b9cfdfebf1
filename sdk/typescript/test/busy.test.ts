import { randomUUID } from "node:crypto";
import * as assert from "uvu/assert";
import { heldDirectory } from "../../../services/ingestion/testing/held-directory.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { createUser, memoryLogger, near, stackMeter, stackSuite, usage } from "./support/fixtures.ts";
import { FaultProxy } from "./support/proxy.ts";

// Clients sending faster than the service stores: the ingestion replica holds at most 150 events,
// the clients send batches of 100 from four processes at once. A batch of another user is held in
// flight until the clients have met the bound, so that they surely do.
const held = heldDirectory("held-user");
const t = stackSuite("sdk: a busy service answers 429 with Retry-After; clients back off and every event counts once", "sdk busy", {
  stack: { services: { ingestion: { maxEventsInFlight: 150, users: held.directory } } },
  before: (ctx) => held.connect(ctx.stack.rpcUrl),
  after: () => held.release(),
  timeoutMs: 1_000,
});

const PLAN = { max_spend_per_period: 1_000_000, cost_rates: { m: { input: 1, output: 1 } } };
const PER_CLIENT = 250;

t("four clients beyond the bound get 429s, back off, and deliver every event exactly once", async (ctx) => {
  const proxy = await FaultProxy.start(ctx.stack.apiUrl);
  ctx.proxies.push(proxy);
  assert.is((await ctx.api.post("/users", { external_user_id: "held-user" })).status, 201);
  const clients = await Promise.all(
    Array.from({ length: 4 }, async () => {
      const userId = await createUser(ctx.api, PLAN);
      const logger = memoryLogger();
      // Delivery driven by flush(); batches of 100, a queue that holds every event recorded.
      const m = stackMeter(ctx, { baseURL: proxy.apiUrl, logger, flushIntervalMs: 60_000, maxBatchSize: 100, maxQueueSize: 1_000 });
      return { m, userId };
    }),
  );
  for (const { m, userId } of clients) {
    for (let i = 0; i < PER_CLIENT; i++) await m.record(userId, { model: "m", input_tokens: 10 + i }); // $0.010 + i/1000
  }
  held.arm();
  const holding = ctx.api.post(
    "/events/batch",
    Array.from({ length: 100 }, () => ({ id: randomUUID(), user_id: "held-user", timestamp: new Date().toISOString(), input_tokens: 7 })),
  );
  await held.entered();
  const flushed = clients.map(({ m }) => m.flush({ timeoutMs: 120_000 }));
  const busy = () => proxy.replies.filter((r) => r.key === "POST /events/batch" && r.status === 429);
  await eventually(() => busy().length >= 4);
  held.release();
  assert.is((await holding).status, 200);
  assert.equal(await Promise.all(flushed), [true, true, true, true]);

  const refused = busy();
  assert.ok(refused.length >= 4, `${refused.length} answers 429`);
  for (const r of refused) assert.ok(r.retryAfter !== undefined && Number(r.retryAfter) >= 1, `Retry-After ${r.retryAfter}`);
  const expectedCost = Array.from({ length: PER_CLIENT }, (_, i) => (10 + i) / 1000).reduce((a, b) => a + b, 0);
  const expectedTokens = Array.from({ length: PER_CLIENT }, (_, i) => 10 + i).reduce((a, b) => a + b, 0);
  for (const { m, userId } of clients) {
    assert.equal([m.stats.sent, m.stats.dropped, m.stats.rejected, m.stats.queued], [PER_CLIENT, 0, 0, 0]);
    const u = await usage(ctx.api, userId);
    assert.is(u.total_tokens, expectedTokens);
    assert.ok(near(u.total_cost, expectedCost), `${u.total_cost} != ${expectedCost}`);
  }
  assert.is((await usage(ctx.api, "held-user")).total_tokens, 700);
});

t.run();
