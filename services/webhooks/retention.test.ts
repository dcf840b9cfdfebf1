import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Db, MongoClient } from "mongodb";
import { connectMongo } from "@meter/lib/mongo";
import { DAY_MS } from "@meter/lib/time";
import { testMongoUrl } from "../../test/support/database.ts";
import { eventually } from "../../test/support/eventually.ts";
import { thresholdCrossing } from "./testing/crossings.ts";
import { startInstance } from "./testing/instance.ts";
import { Receiver } from "./testing/receiver.ts";

/**
 * Webhooks keep events only for subscribed endpoints, and the delivery log (with the events it
 * needs) for WEBHOOKS_LOG_DAYS; claims go once expired. Pending deliveries are never cut short.
 */
const t = suite<{ mongo: MongoClient; db: (tag: string) => Db }>("webhooks retention");
// Relative to the real clock: Agenda runs a job when its time has come by the real clock.
const NOW = new Date();
const OLD = new Date(NOW.getTime() - 40 * DAY_MS);
const RECENT = new Date(NOW.getTime() - 2 * DAY_MS);

t.before(async (ctx) => {
  ctx.mongo = await connectMongo(await testMongoUrl());
  const run = `${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  ctx.db = (tag) => ctx.mongo.db(`webhooks_retention_${tag}_${run}`);
});

t.after(async (ctx) => {
  await ctx.mongo.close();
});

const crossing = (productId: string, pct: number) =>
  thresholdCrossing({
    id: randomUUID(),
    productId,
    userId: "user-1",
    pct,
    periodStart: new Date(OLD.getTime() - DAY_MS),
    periodEnd: NOW,
    crossedAt: OLD,
  });

t("keeps the log window, drops older ended deliveries, their events and expired claims", async ({ db: named }) => {
  const db = named("log");
  let clock = OLD;
  const rx = await new Receiver().start();
  const svc = await startInstance(db, { now: () => clock, logDays: 30 });
  try {
    const p = randomUUID();
    const ep = (await svc.client.createEndpoint({ productId: p, url: rx.url, subscribedEvents: ["usage.threshold.50", "usage.threshold.80"] })).endpoint!;
    const settled = (n: number) =>
      eventually(async () => {
        const list = (await svc.client.listDeliveries({ productId: p, endpointId: ep.id, limit: 200 })).deliveries;
        return list.length === n && list.every((d) => d.status === "success") ? list : undefined;
      }, 30_000, `${n} delivered`);
    await svc.client.publishThresholdCrossings({ crossings: [crossing(p, 50)] });
    await settled(1);
    clock = RECENT;
    await svc.client.publishThresholdCrossings({ crossings: [crossing(p, 80)] });
    const [recent] = await settled(2);
    // Nobody subscribes to 100: no event is stored for it.
    await svc.client.publishThresholdCrossings({ crossings: [crossing(p, 100)] });
    assert.is(await db.collection("events").countDocuments({ product_id: p }), 2, "no event without a subscribed endpoint");
    assert.ok((await db.collection("job_claims").countDocuments({})) >= 2, "each attempt left its claim");

    const report = await svc.module.runRetention(NOW);
    assert.equal(report, { deliveries: 1, events: 1, claims: 2, jobs: 0 });
    const left = (await svc.client.listDeliveries({ productId: p, endpointId: ep.id, limit: 200 })).deliveries;
    assert.equal(left.map((d) => d.id), [recent!.id], "the delivery inside the window is kept");
    const events = await db.collection("events").find({ product_id: p }).toArray();
    assert.equal(events.map((e) => e.type), ["usage.threshold.80"]);
    assert.is(await db.collection("job_claims").countDocuments({}), 0);
    assert.equal(await svc.module.runRetention(NOW), { deliveries: 0, events: 0, claims: 0, jobs: 0 });
  } finally {
    await svc.close();
    await rx.stop();
  }
});

t("a pending delivery older than the window is kept, and so is its event", async ({ db: named }) => {
  const db = named("pending");
  // The clock stands still: after its first attempt fails (nothing listens on port 9), the
  // delivery waits for a second attempt that never comes due, as a delivery between attempts does.
  const svc = await startInstance(db, { now: () => OLD });
  try {
    const p = randomUUID();
    const ep = (await svc.client.createEndpoint({ productId: p, url: "http://127.0.0.1:9/hook", subscribedEvents: ["usage.threshold.50"] })).endpoint!;
    await svc.client.publishThresholdCrossings({ crossings: [crossing(p, 50)] });
    await eventually(async () => (await svc.client.listDeliveries({ productId: p, endpointId: ep.id })).deliveries[0]?.attempt === 1, 30_000, "attempt 1");
    // Only the attempt's claim goes: its lease ended long before NOW.
    assert.equal(await svc.module.runRetention(NOW), { deliveries: 0, events: 0, claims: 1, jobs: 0 });
    const [d] = (await svc.client.listDeliveries({ productId: p, endpointId: ep.id })).deliveries;
    assert.is(d?.status, "pending");
    assert.is(await db.collection("events").countDocuments({ product_id: p }), 1);
  } finally {
    await svc.close();
  }
});

t("an event older than the window whose fan-out is still queued is kept", async ({ db: named }) => {
  const db = named("queued");
  // No dispatcher: the hand-over only records the event and queues its fan-out.
  const svc = await startInstance(db, { now: () => OLD, runJobs: false });
  try {
    const p = randomUUID();
    await svc.client.createEndpoint({ productId: p, url: "http://127.0.0.1:9/hook", subscribedEvents: ["usage.threshold.50"] });
    await svc.client.publishThresholdCrossings({ crossings: [crossing(p, 50)] });
    assert.equal(await svc.module.runRetention(NOW), { deliveries: 0, events: 0, claims: 0, jobs: 0 });
    assert.is(await db.collection("events").countDocuments({ product_id: p }), 1);
    assert.is(await db.collection("delivery_queue").countDocuments({ product_id: p, kind: "fanout" }), 1);
  } finally {
    await svc.close();
  }
});

t.run();
