import type { Db } from "mongodb";
import { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { createLogger } from "@meter/lib/logger";
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
