import type { Db } from "mongodb";
import { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import type { PeerUrls } from "@meter/lib/config";
import type { Logger } from "@meter/lib/logger";
import { pingDb } from "@meter/lib/mongo";
import type { ServiceModule } from "@meter/lib/rpc";

export interface AnalyticsServiceOptions {
  db: Db;
  logger: Logger;
  peers: PeerUrls;
}

/** The analytics service. */
export async function createAnalyticsService(opts: AnalyticsServiceOptions): Promise<ServiceModule> {
  return {
    name: "analytics",
    serviceName: AnalyticsService.typeName,
    routes(router) {
      router.service(AnalyticsService, {});
    },
    healthy: () => pingDb(opts.db),
  };
}
