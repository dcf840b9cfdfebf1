import type { Db } from "mongodb";
import { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import type { PeerUrls } from "@meter/lib/config";
import type { Logger } from "@meter/lib/logger";
import { pingDb } from "@meter/lib/mongo";
import type { ServiceModule } from "@meter/lib/rpc";

export interface PlansServiceOptions {
  db: Db;
  logger: Logger;
  peers: PeerUrls;
}

/** The plans service. */
export async function createPlansService(opts: PlansServiceOptions): Promise<ServiceModule> {
  return {
    name: "plans",
    serviceName: PlansService.typeName,
    routes(router) {
      router.service(PlansService, {});
    },
    healthy: () => pingDb(opts.db),
  };
}
