import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MongoClient } from "mongodb";
import { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { createLogger } from "@meter/lib/logger";
import { rpcClient, serveRpc } from "@meter/lib/rpc";
import { JOBS_COLLECTION } from "@meter/lib/jobs";
import { toTimestamp } from "@meter/lib/time";
import { freshDbName, withTestMongo } from "../../../test/support/database.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { killWhileHolding } from "../../../test/support/killed-worker.ts";
import { createAnalyticsService } from "../index.ts";
import { ROLL } from "./roll.ts";

/**
 * The roll job runs on Agenda. A worker process killed in the middle of it leaves the job
 * locked, its day leased and still dirty; once the lock lifetime has passed, another
 * scheduler on the same database runs that same job and the day's figures come out exact.
 */
const t = suite<{ mongo: MongoClient; url: string }>("analytics roll job: a killed worker's job is picked up");
const logger = createLogger("analytics-roll-job-test", "silent");
const NO_PEERS = { tenancy: "", plans: "", ingestion: "", analytics: "", webhooks: "" };
const LEASE_MS = 1_500;

withTestMongo(t);

t("another scheduler finishes the roll a killed worker held", async ({ mongo, url }) => {
  const dbName = freshDbName("analytics_rolljob");
  const db = mongo.db(dbName);
  // Records only: this instance runs no job.
  const writer = await createAnalyticsService({ db, logger, peers: NO_PEERS, rollIntervalMs: 0 });
  const server = await serveRpc({ modules: [writer], port: 0, logger });
  const client = rpcClient(AnalyticsService, server.url);
  const p = randomUUID();
  const now = new Date();
  const usage = Array.from({ length: 40 }, (_, i) => ({
    productId: p,
    eventId: randomUUID(),
    userId: `u${i % 4}`,
    timestamp: toTimestamp(new Date(now.getTime() - i * 10)),
    model: "gpt-4o",
    tokens: 10n,
    cost: 0.5,
    source: "auto",
    toolCalls: 0n,
  }));
  await client.recordEvents({ usage });

  let survivor: Awaited<ReturnType<typeof createAnalyticsService>> | undefined;
  try {
    const held = await killWhileHolding(db, {
      entry: "services/analytics/testing/roll-worker.ts", url, dbName, env: { ROLL_LEASE_MS: String(LEASE_MS) }, job: ROLL, timeoutMs: 60_000,
    });
    const jobs = db.collection(JOBS_COLLECTION);
    assert.ok((await db.collection("dirty_days").countDocuments({})) > 0, "the killed worker left the day dirty");

    survivor = await createAnalyticsService({ db, logger, peers: NO_PEERS, rollIntervalMs: 100, rollLeaseMs: LEASE_MS });
    await survivor.start?.();
    await eventually(async () => (await db.collection("dirty_days").countDocuments({})) === 0, 30_000, "the day to be rolled");
    const job = await jobs.findOne({ _id: held._id });
    assert.ok(job && job.lastRunAt > held.lockedAt, "the job the dead worker held ran again");
    assert.is(await jobs.countDocuments({ name: ROLL }), 1, "still one roll job");
    const s = await client.getSummary({ productId: p, days: 1 });
    assert.is(Number(s.current!.totalEvents), 40);
    assert.is(s.current!.totalCost, 20);
    assert.is(Number(s.current!.activeUsers), 4);
  } finally {
    await survivor?.stop?.();
    await server.close();
  }
});

t.run();
