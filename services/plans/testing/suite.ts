import { randomUUID } from "node:crypto";
import { ConnectError, type Client } from "@connectrpc/connect";
import type { MongoClient } from "mongodb";
import type { Test } from "uvu";
import { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import type { RpcServer } from "@meter/lib/rpc";
import { toTimestamp } from "@meter/lib/time";
import { withServedModule } from "../../../test/support/rpc.ts";
import { createPlansService } from "../index.ts";

/** A suite calling the plans service over gRPC (`ctx.client`), on a database of its own (`ctx.dbName`). */
export interface PlansSuite {
  mongo: MongoClient;
  server: RpcServer;
  client: Client<typeof PlansService>;
  dbName: string;
}

/** The plans service needs no peer. */
export const NO_PEERS = { tenancy: "", plans: "", ingestion: "", analytics: "", webhooks: "" };

export function withPlans<C extends PlansSuite>(t: Test<C>): void {
  withServedModule(t, PlansService, "plans", (db, logger) => createPlansService({ db, logger, peers: NO_PEERS }));
}

/** The error a call fails with; a call that succeeds fails the test. */
export async function failure(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("expected the call to fail");
}

/** A product id of its own, so that tests on one database do not meet. */
export const product = () => randomUUID();
export const jan = { periodStart: toTimestamp(new Date("2026-01-01T00:00:00Z")), periodEnd: toTimestamp(new Date("2026-02-01T00:00:00Z")) };
export const feb = { periodStart: toTimestamp(new Date("2026-02-01T00:00:00Z")), periodEnd: toTimestamp(new Date("2026-03-01T00:00:00Z")) };
