import type { Client } from "@connectrpc/connect";
import type { MongoClient } from "mongodb";
import type { Test } from "uvu";
import { TenancyService } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import type { RpcServer } from "@meter/lib/rpc";
import { withServedModule } from "../../../test/support/rpc.ts";
import { createTenancyService } from "../index.ts";

/** A suite calling the tenancy service over gRPC (`ctx.client`), on a database of its own. */
export interface TenancySuite {
  mongo: MongoClient;
  server: RpcServer;
  client: Client<typeof TenancyService>;
  dbName: string;
}

export function withTenancy<C extends TenancySuite>(t: Test<C>): void {
  withServedModule(t, TenancyService, "tenancy", (db, logger) => createTenancyService({ db, logger }));
}
