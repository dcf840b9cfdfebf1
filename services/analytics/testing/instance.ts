import type { Db, MongoClient } from "mongodb";
import type { Test } from "uvu";
import { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { createLogger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { freshDbName, testMongoUrl } from "../../../test/support/database.ts";
import { serveInstance, type Instance as ServedInstance } from "../../../test/support/instance.ts";
import { createAnalyticsService, type AnalyticsModule, type AnalyticsServiceOptions } from "../index.ts";

export type Instance = ServedInstance<typeof AnalyticsService, AnalyticsModule>;

/** Analytics needs no peer: it only answers and rolls. */
const NO_PEERS = { tenancy: "", plans: "", ingestion: "", analytics: "", webhooks: "" };

/** One analytics replica over real gRPC on the given database; it rolls only when `rollIntervalMs` is set. */
export async function startInstance(db: Db, opts: Partial<AnalyticsServiceOptions> = {}): Promise<Instance> {
  const logger = createLogger("analytics-test", process.env.TEST_LOG_LEVEL ?? "silent");
  return serveInstance(AnalyticsService, await createAnalyticsService({ db, logger, peers: NO_PEERS, rollIntervalMs: 0, ...opts }), logger);
}

/** What a suite of analytics replicas shares: a database of its own, and the replicas started on it. */
export interface Replicas {
  mongo: MongoClient;
  db: Db;
  instances: Instance[];
}

/** A suite's database (`ctx.db`, named `<prefix>_…`); the replicas `replica` started on it are closed after the suite. */
export function withReplicas<C extends Replicas>(t: Test<C>, prefix: string): void {
  t.before(async (ctx) => {
    ctx.mongo = await connectMongo(await testMongoUrl());
    ctx.db = ctx.mongo.db(freshDbName(prefix));
    ctx.instances = [];
  });
  t.after(async (ctx) => {
    for (const i of ctx.instances) await i.close();
    await ctx.db.dropDatabase().catch(() => undefined);
    await ctx.mongo.close();
  });
}

/** Another replica on the suite's database. */
export async function replica(ctx: Replicas, opts: Partial<AnalyticsServiceOptions> = {}): Promise<Instance> {
  const inst = await startInstance(ctx.db, opts);
  ctx.instances.push(inst);
  return inst;
}
