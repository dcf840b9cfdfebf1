import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MongoClient } from "mongodb";
import { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { createLogger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { rpcClient, serveRpc, type RpcServer } from "@meter/lib/rpc";
import { testMongoUrl } from "../../test/support/database.ts";
import { eventually } from "../../test/support/eventually.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";
import { createAnalyticsService, type AnalyticsModule } from "./index.ts";

/**
 * The analytics service is down while events are ingested through the gateway. Ingestion's
 * outbox keeps the facts and retries; once analytics is back (and even though its first
 * delivery "crashes" after storing the facts, unacknowledged), totals converge to exactly
 * what was ingested.
 */
const t = suite<{ mongo: MongoClient; stack: TestStack; url: string; port: number }>("analytics down while ingesting");
const logger = createLogger("analytics-fault-test", "silent");
/** Hand-overs the ingestion relay has tried, whether or not analytics answered. */
let handovers = 0;

t.before(async (ctx) => {
  ctx.mongo = await connectMongo(await testMongoUrl());
  // Reserve a port for the analytics process, then leave it closed: analytics is down.
  const probe = await serveRpc({ modules: [], port: 0, logger });
  ctx.port = probe.port;
  ctx.url = probe.url;
  await probe.close();
  const feed = rpcClient(AnalyticsService, ctx.url);
  ctx.stack = await startTestStack({
    services: {
      ingestion: {
        relayIntervalMs: 50,
        relayMaxBackoffMs: 500,
        analytics: {
          recordEvents: async (usage, gates) => {
            handovers++;
            await feed.recordEvents({ usage, gates });
          },
        },
      },
      // The stack's own analytics instance only answers queries (same database, no roller).
      analytics: { rollIntervalMs: 0 },
    },
  });
});

t.after(async (ctx) => {
  await ctx.stack.close();
  await ctx.mongo.close();
});

t("totals converge to exactly the ingested figures once analytics is back", async ({ stack, mongo, port }) => {
  const { api } = await stack.newProduct();
  const batch = Array.from({ length: 120 }, (_, i) => ({
    id: randomUUID(),
    user_id: `u${i % 9}`,
    timestamp: new Date(Date.now() - (i % 5) * 3_600_000).toISOString(),
    model: i % 2 ? "gpt-4o" : "o1",
    input_tokens: i,
    output_tokens: 2 * i,
    cost_total: (i % 7) / 4,
  }));
  assert.is((await api.post("/events/batch", batch)).status, 200);
  assert.is((await api.post("/events/batch", batch.slice(0, 50))).body.duplicates, 50);
  assert.is((await api.post("/users", { external_user_id: "u0" })).status, 201);
  assert.is((await api.post("/events", { user_id: "u0", cost: 2.5 })).status, 201);
  const gates = [0, 1, 2].map((i) => ({
    id: randomUUID(),
    user_id: "u1",
    timestamp: new Date().toISOString(),
    status: i === 2 ? "hard_gate" : "soft_gate",
    gate_reason: "total_spend",
    usage_pct: 0.9,
    current_value: 9,
    limit_value: 10,
  }));
  assert.is((await api.post("/gate-events/batch", gates)).status, 200);
  const expected = {
    cost: batch.reduce((a, e) => a + e.cost_total, 0) + 2.5,
    tokens: batch.reduce((a, e) => a + e.input_tokens + e.output_tokens, 0),
    events: batch.length + 1,
  };

  // Analytics is down: the relay has tried to hand the facts over (twice, after they were
  // stored), and nothing has arrived.
  const tried = handovers;
  await eventually(() => handovers >= tried + 2, 30_000, "the relay trying to hand the facts over");
  let s = (await api.get("/analytics/summary?days=2")).body;
  assert.equal([s.total_events, s.total_cost], [0, 0]);

  // Back up on the same address; its first delivery stores the facts and then crashes.
  let crashes = 0;
  const module: AnalyticsModule = await createAnalyticsService({
    db: mongo.db(`${stack.dbPrefix}_analytics`),
    logger,
    peers: { tenancy: "", plans: "", ingestion: "", analytics: "", webhooks: "" },
    rollIntervalMs: 100,
    faults: {
      afterLedgerWrite() {
        if (crashes++ === 0) throw new Error("simulated crash after storing facts");
      },
    },
  });
  const server: RpcServer = await serveRpc({ modules: [module], port, logger });
  await module.start?.();
  try {
    const deadline = Date.now() + 45_000;
    for (;;) {
      s = (await api.get("/analytics/summary?days=2")).body;
      if (s.total_events >= expected.events || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(crashes >= 1, "the first delivery must have crashed");
    assert.is(s.total_events, expected.events);
    // A later event through the same outbox and roller: once it counts, any late replay of the
    // facts above has arrived too, and must not have changed anything.
    const later = { id: randomUUID(), user_id: "u0", timestamp: new Date().toISOString(), model: "o1", input_tokens: 1, output_tokens: 2, cost_total: 0.5 };
    assert.is((await api.post("/events/batch", [later])).status, 200);
    s = await eventually(async () => {
      const body = (await api.get("/analytics/summary?days=2")).body;
      return body.total_events > expected.events ? body : undefined;
    }, 45_000, "the later event counted");
    assert.is(s.total_events, expected.events + 1);
    assert.ok(Math.abs(s.total_cost - expected.cost - 0.5) < 1e-6, `${s.total_cost} != ${expected.cost} + 0.5`);
    assert.is(s.total_tokens, expected.tokens + 3);
    assert.is(s.active_users, 9);
    const g = (await api.get("/analytics/gate-timeseries?days=1")).body.data[0];
    assert.equal([g.soft_gates, g.hard_gates], [2, 1]);
  } finally {
    await module.stop?.();
    await server.close();
  }
});

t.run();
