import type { Db } from "mongodb";
import { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import type { PeerUrls } from "@meter/lib/config";
import type { Logger } from "@meter/lib/logger";
import { pingDb } from "@meter/lib/mongo";
import type { ServiceModule } from "@meter/lib/rpc";

export interface WebhooksServiceOptions {
  db: Db;
  logger: Logger;
  peers: PeerUrls;
}

/** The webhooks service. */
export async function createWebhooksService(opts: WebhooksServiceOptions): Promise<ServiceModule> {
  return {
    name: "webhooks",
    serviceName: WebhooksService.typeName,
    routes(router) {
      router.service(WebhooksService, {});
    },
    healthy: () => pingDb(opts.db),
  };
}
