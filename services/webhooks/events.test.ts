import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Db, MongoClient } from "mongodb";
import { create } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { AnalyticsService, GetWindowReportRequestSchema, type GetWindowReportRequest } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { GateNoticeSchema, type GateNotice } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { rpcError } from "@meter/lib/errors";
import { createLogger } from "@meter/lib/logger";
import { connectMongo, pingDb } from "@meter/lib/mongo";
import { serveRpc, type RpcServer } from "@meter/lib/rpc";
import { toTimestamp } from "@meter/lib/time";
import { testMongoUrl } from "../../test/support/database.ts";
import { analyticsAdapter } from "./adapters/analytics.ts";
import { startInstance, type Instance } from "./testing/instance.ts";
import { laterEventDelivered } from "./testing/later-event.ts";
import { Receiver, signatureValid } from "./testing/receiver.ts";
import { eventually } from "../../test/support/eventually.ts";

interface Ctx {
  mongo: MongoClient;
  db: Db;
  svc: Instance;
  analytics: RpcServer;
  reportCalls: GetWindowReportRequest[];
  failReports: number;
}
const t = suite<Ctx>("webhooks gate events and summaries over gRPC");

t.before(async (ctx) => {
  ctx.mongo = await connectMongo(await testMongoUrl());
  ctx.db = ctx.mongo.db(`webhooks_events_${Date.now()}`);
  ctx.reportCalls = [];
  ctx.failReports = 0;
  // A stand-in for the analytics peer, over real gRPC, that can be made to fail.
  const logger = createLogger("analytics-stub", "silent");
  ctx.analytics = await serveRpc({
    port: 0,
    logger,
    modules: [
      {
        name: "analytics",
        serviceName: AnalyticsService.typeName,
        healthy: () => pingDb(ctx.db),
        routes(router) {
          router.service(AnalyticsService, {
            async getWindowReport(req) {
              ctx.reportCalls.push(create(GetWindowReportRequestSchema, req));
              if (ctx.failReports > 0) {
                ctx.failReports--;
                throw rpcError.unavailable("analytics is starting");
              }
              return {
                totals: { totalCost: 12.5, totalTokens: 4000n, totalEvents: 9n, activeUsers: 2n },
                softGates: 3n,
                hardGates: 1n,
                topUsers: [
                  { userId: "alice", cost: 10, tokens: 3000n, events: 5n },
                  { userId: "bob", cost: 2.5, tokens: 1000n, events: 4n },
                ],
              };
            },
          });
        },
      },
    ],
  });
  ctx.svc = await startInstance(ctx.db, { analytics: analyticsAdapter(ctx.analytics.url), gateWindowMs: 60_000 });
});

t.after(async (ctx) => {
  await ctx.svc.close();
  await ctx.analytics.close();
  await ctx.mongo.close();
});

function gate(productId: string, over: Partial<GateNotice> = {}): GateNotice {
  return create(GateNoticeSchema, {
    id: randomUUID(),
    productId,
    userId: "u1",
    status: "soft_gate",
    gateReason: "total_spend",
    usagePct: 0.85,
    currentValue: 8.5,
    limitValue: 10,
    blocked: false,
    message: "80% of the period budget used",
    timestamp: toTimestamp(new Date("2026-11-20T10:00:10Z")),
    ...over,
  });
}

const ALL_GATES = ["gate_event.soft_gate", "gate_event.hard_gate", "gate_event.blocked"];

t("soft, hard and blocked gate events map to their webhook types with the contract's payload", async ({ svc }) => {
  const rx = await new Receiver().start();
  try {
    const productId = randomUUID();
    const ep = await svc.client.createEndpoint({ productId, url: rx.url, subscribedEvents: ALL_GATES });
    await svc.client.publishGateEvents({
      events: [
        gate(productId),
        gate(productId, { status: "hard_gate", usagePct: 1.02, currentValue: 10.2, blocked: true, message: undefined }),
      ],
    });
    await eventually(() => rx.received.length === 3, 20_000);
    const types = rx.received.map((r) => r.json.type).sort();
    assert.equal(types, ["gate_event.blocked", "gate_event.hard_gate", "gate_event.soft_gate"]);
    for (const r of rx.received) assert.ok(signatureValid(ep.secret, r));
    assert.equal(rx.of("gate_event.soft_gate")[0]!.json.data, {
      user_id: "u1",
      status: "soft_gate",
      gate_reason: "total_spend",
      usage_pct: 0.85,
      current_value: 8.5,
      limit_value: 10,
      blocked: false,
      message: "80% of the period budget used",
    });
    const blocked = rx.of("gate_event.blocked")[0]!.json.data;
    assert.is(blocked.status, "hard_gate");
    assert.is(blocked.blocked, true);
    assert.is(blocked.message, null);
  } finally {
    await rx.stop();
  }
});

t("a burst of identical gate events is coalesced to one webhook per window", async ({ svc }) => {
  const rx = await new Receiver().start();
  try {
    const productId = randomUUID();
    await svc.client.createEndpoint({ productId, url: rx.url, subscribedEvents: ALL_GATES });
    const base = Date.parse("2026-11-20T10:00:00Z");
    const burst = Array.from({ length: 30 }, (_, i) => gate(productId, { timestamp: toTimestamp(new Date(base + i * 1_000)) }));
    await Promise.all([svc.client.publishGateEvents({ events: burst.slice(0, 15) }), svc.client.publishGateEvents({ events: burst.slice(15) })]);
    await svc.client.publishGateEvents({ events: burst }); // handed over again
    // another reason, another user and the next window each get their own
    await svc.client.publishGateEvents({
      events: [
        gate(productId, { gateReason: "model_limit:gpt-4o" }),
        gate(productId, { userId: "u2" }),
        gate(productId, { timestamp: toTimestamp(new Date(base + 61_000)) }),
      ],
    });
    await eventually(() => rx.received.length >= 4, 20_000);
    await laterEventDelivered(svc.client, productId, "threshold");
    const keys = rx.received.map((r) => `${r.json.data.user_id}|${r.json.data.gate_reason}`).sort();
    assert.equal(keys, ["u1|model_limit:gpt-4o", "u1|total_spend", "u1|total_spend", "u2|total_spend"]);
  } finally {
    await rx.stop();
  }
});

t("gate events are validated", async ({ svc }) => {
  const productId = randomUUID();
  for (const bad of [{ status: "ok" }, { productId: "" }, { userId: "" }, { gateReason: "" }]) {
    let failed = false;
    await svc.client.publishGateEvents({ events: [gate(productId, bad)] }).catch(() => (failed = true));
    assert.ok(failed, JSON.stringify(bad));
  }
});

t("daily summary: once per product and period, figures from analytics, retried while it is unavailable", async (ctx) => {
  const { svc } = ctx;
  const rx = await new Receiver().start();
  const quiet = await new Receiver().start();
  try {
    const productId = randomUUID();
    const ep = await svc.client.createEndpoint({ productId, url: rx.url, subscribedEvents: ["usage.summary.daily"] });
    const other = randomUUID();
    await svc.client.createEndpoint({ productId: other, url: quiet.url, subscribedEvents: ["usage.summary.weekly"] });
    ctx.failReports = 2;
    const runAt = new Date("2026-11-21T06:00:00Z");
    // two replicas' schedules firing for the same period
    await Promise.all([svc.module.triggerSummaries("daily", runAt), svc.module.triggerSummaries("daily", runAt)]);
    await eventually(() => rx.received.length === 1, 30_000, "summary");
    await laterEventDelivered(svc.client, productId, "threshold");
    assert.is(rx.received.length, 1);
    assert.is(quiet.received.length, 0, "not subscribed to daily");
    const r = rx.received[0]!;
    assert.ok(signatureValid(ep.secret, r));
    assert.is(r.json.type, "usage.summary.daily");
    assert.equal(r.json.data, {
      summary_type: "daily",
      period_start: "2026-11-20T00:00:00.000Z",
      period_end: "2026-11-21T00:00:00.000Z",
      active_users: 2,
      total_cost: 12.5,
      total_tokens: 4000,
      total_events: 9,
      soft_gates: 3,
      hard_gates: 1,
      top_users: [
        { user_id: "alice", cost: 10, tokens: 3000 },
        { user_id: "bob", cost: 2.5, tokens: 1000 },
      ],
    });
    const mine = ctx.reportCalls.filter((c) => c.productId === productId);
    assert.ok(mine.length >= 3, "two failures, then the answer that was sent");
    assert.is(timestampDate(mine[0]!.start!).toISOString(), "2026-11-20T00:00:00.000Z");
    assert.is(timestampDate(mine[0]!.end!).toISOString(), "2026-11-21T00:00:00.000Z");
    // the same period again sends nothing; the next period sends again
    await svc.module.triggerSummaries("daily", new Date("2026-11-21T07:30:00Z"));
    await svc.module.triggerSummaries("daily", new Date("2026-11-22T06:00:00Z"));
    await eventually(() => rx.received.length === 2, 30_000, "next day's summary");
    await laterEventDelivered(svc.client, productId, "threshold");
    assert.is(rx.received.length, 2);
    assert.is(rx.received[1]!.json.data.period_start, "2026-11-21T00:00:00.000Z");
  } finally {
    await rx.stop();
    await quiet.stop();
  }
});

t("summary schedules are stored as UTC cron jobs, one per type", async ({ db }) => {
  const jobs = await db
    .collection("agenda_jobs")
    .find({ name: /^webhooks\.summary-schedule\./ })
    .toArray();
  const byName = Object.fromEntries(jobs.map((j) => [j.name, j]));
  assert.is(jobs.length, 3);
  assert.is(byName["webhooks.summary-schedule.daily"]!.repeatInterval, "0 6 * * *");
  assert.is(byName["webhooks.summary-schedule.weekly"]!.repeatInterval, "0 6 * * 1");
  assert.is(byName["webhooks.summary-schedule.monthly"]!.repeatInterval, "0 6 1 * *");
  for (const j of jobs) {
    assert.is(j.repeatTimezone, "UTC");
    const next = j.nextRunAt as Date;
    assert.is(next.getUTCHours(), 6);
    assert.is(next.getUTCMinutes(), 0);
  }
  assert.is((byName["webhooks.summary-schedule.weekly"]!.nextRunAt as Date).getUTCDay(), 1);
  assert.is((byName["webhooks.summary-schedule.monthly"]!.nextRunAt as Date).getUTCDate(), 1);
});

t.run();
