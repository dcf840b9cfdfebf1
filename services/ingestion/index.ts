import type { Db } from "mongodb";
import { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import type { PeerUrls } from "@meter/lib/config";
import type { Logger } from "@meter/lib/logger";
import { pingDb } from "@meter/lib/mongo";
import type { ServiceModule } from "@meter/lib/rpc";

export interface IngestionServiceOptions {
  db: Db;
  logger: Logger;
  peers: PeerUrls;
}

/** The ingestion service. */
export async function createIngestionService(opts: IngestionServiceOptions): Promise<ServiceModule> {
  return {
    name: "ingestion",
    serviceName: IngestionService.typeName,
    routes(router) {
      router.service(IngestionService, {});
    },
    healthy: () => pingDb(opts.db),
  };
}
