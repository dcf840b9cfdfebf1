import type { Db } from "mongodb";
import type { Client } from "@connectrpc/connect";
import { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { createLogger } from "@meter/lib/logger";
import { rpcClient, serveRpc, type RpcServer } from "@meter/lib/rpc";
import { createWebhooksService, type WebhooksModule, type WebhooksServiceOptions } from "../index.ts";

export interface Instance {
  module: WebhooksModule;
  server: RpcServer;
  client: Client<typeof WebhooksService>;
  close(): Promise<void>;
}

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
  const server = await serveRpc({ modules: [module], port: 0, logger });
  await module.start?.();
  return {
    module,
    server,
    client: rpcClient(WebhooksService, server.url),
    async close() {
      await module.stop?.();
      await server.close();
    },
  };
}
