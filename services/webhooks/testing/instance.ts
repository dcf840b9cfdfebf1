import type { Db, MongoClient } from "mongodb";
import type { Test } from "uvu";
import { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { createLogger } from "@meter/lib/logger";
import { connectTestMongo, freshDbName } from "../../../test/support/database.ts";
import { serveInstance, type Instance as ServedInstance } from "../../../test/support/instance.ts";
import { createWebhooksService, type WebhooksModule, type WebhooksServiceOptions } from "../index.ts";

export type Instance = ServedInstance<typeof WebhooksService, WebhooksModule>;

/** Options that make the retry table take seconds: 1 min -> 10 ms ... 8 h -> 4.8 s. */
export const FAST: Partial<WebhooksServiceOptions> = {
  allowInsecureUrls: true,
  attemptTimeoutMs: 3_000,
  timeScale: 1 / 6000,
  processEveryMs: 100,
};

/** One replica of the webhooks service over real gRPC on the given database. */
export async function startInstance(db: Db, opts: Partial<WebhooksServiceOptions> = {}): Promise<Instance> {
  const logger = createLogger("webhooks-test", process.env.TEST_LOG_LEVEL ?? "silent");
  const unused = "http://127.0.0.1:9";
  const module = await createWebhooksService({
    db,
    logger,
    peers: { tenancy: unused, plans: unused, ingestion: unused, analytics: unused, webhooks: unused },
    ...FAST,
    ...opts,
  });
  return serveInstance(WebhooksService, module, logger);
}

/** What a suite of one webhooks replica has: the replica (`svc`) and its database. */
export interface InstanceSuite {
  mongo: MongoClient;
  db: Db;
  svc: Instance;
}

/** A suite's webhooks replica (`ctx.svc`, started with `opts`) on a database of its own. */
export function withInstance<C extends InstanceSuite>(t: Test<C>, prefix: string, opts: Partial<WebhooksServiceOptions> = {}): void {
  let mongo: Awaited<ReturnType<typeof connectTestMongo>> | undefined;
  t.before(async (ctx) => {
    ctx.mongo = mongo = await connectTestMongo();
    ctx.db = ctx.mongo.db(freshDbName(prefix));
    ctx.svc = await startInstance(ctx.db, opts);
  });
  t.after(async (ctx) => {
    await ctx.svc.close();
    await mongo?.closeIdle();
  });
}
