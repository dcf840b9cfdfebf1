import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MongoClient } from "mongodb";
import { createLogger } from "@meter/lib/logger";
import { JOBS_COLLECTION } from "@meter/lib/jobs";
import { freshDbName, withTestMongo } from "../../test/support/database.ts";
import { eventually } from "../../test/support/eventually.ts";
import { killWhileHolding } from "../../test/support/killed-worker.ts";
import type { UsageFactInit } from "./adapters/peers.ts";
import { createIngestionService } from "./index.ts";
import { RELAY } from "./jobs/relay.ts";
import { entry } from "./store/outbox.ts";

/**
 * The relay runs on Agenda. A worker killed while handing an outbox entry over leaves the
 * relay job locked and the entry in place; once the lock lifetime has passed, another
 * scheduler on the same database runs that job and the entry reaches its peer.
 */
const t = suite<{ mongo: MongoClient; url: string }>("ingestion relay job: a killed worker's job is picked up");
const logger = createLogger("ingestion-relay-job-test", "silent");
/** Never called: the relay hands over through the peers given below. */
const NO_PEERS = { tenancy: "", plans: "http://127.0.0.1:1", ingestion: "", analytics: "", webhooks: "" };
const LOCK_MS = 1_500;

withTestMongo(t);

t("another scheduler hands over the entry a killed worker was sending", async ({ mongo, url }) => {
  const dbName = freshDbName("ingestion_relayjob");
  const db = mongo.db(dbName);
  const p = randomUUID();
  const facts = Array.from({ length: 5 }, (_, i) => ({
    product_id: p, event_id: randomUUID(), user_id: "u1", timestamp: new Date(), model: "gpt-4o",
    total_tokens: 10 + i, cost_total: 0.5, source: "auto", tool_call_count: 0,
  }));
  await db.collection("outbox_analytics").insertOne(entry("usage", `job_${randomUUID()}`, facts) as never);

  let survivor: Awaited<ReturnType<typeof createIngestionService>> | undefined;
  try {
    const held = await killWhileHolding(db, {
      entry: "services/ingestion/testing/relay-worker.ts", url, dbName, env: { RELAY_LOCK_MS: String(LOCK_MS) }, job: RELAY, timeoutMs: 20_000,
    });
    const jobs = db.collection(JOBS_COLLECTION);
    assert.is(await db.collection("outbox_analytics").countDocuments({}), 1, "the entry is still there");

    const received: UsageFactInit[] = [];
    survivor = await createIngestionService({
      db, logger, peers: NO_PEERS, relayIntervalMs: 100, relayLockMs: LOCK_MS,
      analytics: { recordEvents: async (u) => void received.push(...u) },
      webhooks: { publishGateEvents: async () => {}, publishThresholdCrossings: async () => {}, publishCreditEvents: async () => {} },
    });
    await survivor.start?.();
    await eventually(async () => (await db.collection("outbox_analytics").countDocuments({})) === 0, 30_000, "the entry handed over");
    assert.equal(new Set(received.map((f) => f.eventId)), new Set(facts.map((f) => f.event_id)));
    const job = await jobs.findOne({ _id: held._id });
    assert.ok(job && job.lastRunAt > held.lockedAt, "the job the dead worker held ran again");
    assert.is(await jobs.countDocuments({ name: RELAY, "data.key": "every" }), 1, "still one repeating relay job");
  } finally {
    await survivor?.stop?.();
  }
});

t("an outbox of whole batches, together larger than one database answer, drains", async ({ mongo }) => {
  // 21 entries of 10,000 facts (a batch at its limit, about 3 MB each): read twenty at once,
  // the answer passed the embedded database's 48 MB message bound and the relay stalled.
  const db = mongo.db(freshDbName("ingestion_relaybig"));
  const p = randomUUID();
  const ENTRIES = 21;
  const PER_ENTRY = 10_000;
  for (let n = 0; n < ENTRIES; n++) {
    const facts = Array.from({ length: PER_ENTRY }, (_, i) => ({
      product_id: p, event_id: `e${n}-${i}-${randomUUID()}`, user_id: `user-${i % 100}`, timestamp: new Date(),
      model: "gpt-4o", total_tokens: 100 + i, cost_total: 0.001, source: "auto", tool_call_count: 0,
    }));
    await db.collection("outbox_analytics").insertOne(entry("usage", `job_${randomUUID()}`, facts) as never);
  }
  const received = new Set<string>();
  const service = await createIngestionService({
    db, logger, peers: NO_PEERS, relayIntervalMs: 100,
    analytics: { recordEvents: async (u) => void u.forEach((f) => received.add(String(f.eventId))) },
    webhooks: { publishGateEvents: async () => {}, publishThresholdCrossings: async () => {}, publishCreditEvents: async () => {} },
  });
  try {
    await service.start?.();
    await eventually(async () => (await db.collection("outbox_analytics").countDocuments({})) === 0, 120_000, "every entry handed over");
    assert.is(received.size, ENTRIES * PER_ENTRY);
  } finally {
    await service.stop?.();
  }
});

t.run();
