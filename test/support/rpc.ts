import type { DescService } from "@bufbuild/protobuf";
import { ConnectError, type Client, type Code } from "@connectrpc/connect";
import type { Db, MongoClient } from "mongodb";
import type { Test } from "uvu";
import { createLogger, type Logger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { rpcClient, serveRpc, type RpcServer, type ServiceModule } from "@meter/lib/rpc";
import { testMongoUrl } from "./database.ts";

/** The error an RPC fails with, or undefined when it succeeds. */
export async function rpcFailure(p: Promise<unknown>): Promise<ConnectError | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return ConnectError.from(err);
  }
}

/** The Connect code an RPC fails with, or undefined when it succeeds. */
export async function rpcCode(p: Promise<unknown>): Promise<Code | undefined> {
  return (await rpcFailure(p))?.code;
}

/**
 * A suite's one service over real gRPC, on a database of its own named `<name>_<time>`:
 * `ctx.client` calls it, `ctx.mongo` and `ctx.dbName` reach its data.
 */
export function withServedModule<S extends DescService>(
  t: Test<{ mongo: MongoClient; server: RpcServer; client: Client<S>; dbName: string }>,
  service: S,
  name: string,
  create: (db: Db, logger: Logger) => Promise<ServiceModule>,
): void {
  t.before(async (ctx) => {
    ctx.mongo = await connectMongo(await testMongoUrl());
    ctx.dbName = `${name}_${Date.now()}`;
    const logger = createLogger(`${name}-test`, "silent");
    ctx.server = await serveRpc({ modules: [await create(ctx.mongo.db(ctx.dbName), logger)], port: 0, logger });
    ctx.client = rpcClient(service, ctx.server.url);
  });
  t.after(async (ctx) => {
    await ctx.server.close();
    await ctx.mongo.close();
  });
}
