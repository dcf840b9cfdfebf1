import type { MongoClient } from "mongodb";
import type { PeerUrls } from "@meter/lib/config";
import type { Logger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { untilReachable } from "@meter/lib/until-reachable";
import { listenRpc, type ServiceModule } from "@meter/lib/rpc";
import { buildGateway, type Gateway } from "@meter/gateway";
import { connectClients } from "@meter/gateway/clients";
import type { Protection } from "@meter/gateway/config";
import { createAnalyticsService } from "@meter/analytics";
import { createIngestionService } from "@meter/ingestion";
import { createPlansService } from "@meter/plans";
import { createTenancyService } from "@meter/tenancy";
import { createWebhooksService } from "@meter/webhooks";

export interface StackOptions {
  mongoUrl: string;
  /** Each service keeps its collections in database `<dbPrefix>_<service>`. */
  dbPrefix?: string;
  /** Internal gRPC port shared by every service (0 picks a free one). */
  rpcPort?: number;
  rpcHost?: string;
  /**
   * Calls from the gateway and between services go to the modules in this process instead of
   * over the internal port (which still serves other processes). Off by default, so that tests
   * exercise real gRPC between the modules; `npm start` turns it on (RPC_IN_PROCESS).
   */
  inProcessRpc?: boolean;
  /** Gateway HTTP port (0 picks a free one). */
  httpPort?: number;
  httpHost?: string;
  logger: Logger;
  authCacheTtlMs?: number;
  /** Gateway rate limits and refused-key cache; generous local defaults when absent. */
  protection?: Protection;
  /** Ingestion batches of one product the gateway admits at once (default 4; 0: no limit). */
  batchConcurrency?: number;
  /** Longest wait of a batch for admission in the gateway (default 5 s; 0: none). */
  batchMaxWaitMs?: number;
  /** A product's share of recent time while another is served (INGESTION_PRODUCT_SHARE); off when absent. */
  batchShare?: { share: number; windowMs: number };
  /** Bytes of batch bodies the gateway holds at once, all products together (default 96 MiB; 0: no bound). */
  batchBytesInFlight?: number;
  /** Per-service options beyond db, logger and peers (tests use these for clocks, intervals...). */
  services?: {
    tenancy?: Partial<Parameters<typeof createTenancyService>[0]>;
    plans?: Partial<Parameters<typeof createPlansService>[0]>;
    ingestion?: Partial<Parameters<typeof createIngestionService>[0]>;
    analytics?: Partial<Parameters<typeof createAnalyticsService>[0]>;
    webhooks?: Partial<Parameters<typeof createWebhooksService>[0]>;
  };
}

export interface Stack {
  /** e.g. http://127.0.0.1:8080/api/v1 */
  apiUrl: string;
  rpcUrl: string;
  gateway: Gateway;
  close(): Promise<void>;
}

/**
 * Every service and the gateway in one process. The services talk to each other and the
 * gateway talks to them through the same clients as in split mode, addressed to one internal
 * port: over gRPC on it, or, with `inProcessRpc`, through an in-process transport to the same
 * routes and interceptors (the port still serves gRPC to everyone else).
 */
export async function startStack(opts: StackOptions): Promise<Stack> {
  const prefix = opts.dbPrefix ?? "meter";
  // A MongoDB not reachable yet is waited for, as a split service waits (lib/until-reachable.ts).
  const mongo: MongoClient = await untilReachable(opts.logger, () => connectMongo(opts.mongoUrl));
  const rpc = await listenRpc({
    port: opts.rpcPort ?? 0,
    host: opts.rpcHost ?? "127.0.0.1",
    logger: opts.logger,
    inProcess: opts.inProcessRpc,
  });
  const peers: PeerUrls = { tenancy: rpc.url, plans: rpc.url, ingestion: rpc.url, analytics: rpc.url, webhooks: rpc.url };
  const common = (name: string) => ({ db: mongo.db(`${prefix}_${name}`), logger: opts.logger.child({ service: name }), peers });

  const modules: ServiceModule[] = await Promise.all([
    createTenancyService({ ...common("tenancy"), ...opts.services?.tenancy }),
    createPlansService({ ...common("plans"), ...opts.services?.plans }),
    createIngestionService({ ...common("ingestion"), ...opts.services?.ingestion }),
    createAnalyticsService({ ...common("analytics"), ...opts.services?.analytics }),
    createWebhooksService({ ...common("webhooks"), ...opts.services?.webhooks }),
  ]);
  await rpc.serve(modules);
  for (const m of modules) await m.start?.();

  const gateway = await buildGateway({
    clients: connectClients(peers),
    logger: opts.logger.child({ service: "gateway" }),
    authCacheTtlMs: opts.authCacheTtlMs,
    protection: opts.protection,
    batchConcurrency: opts.batchConcurrency,
    batchMaxWaitMs: opts.batchMaxWaitMs,
    batchShare: opts.batchShare,
    batchBytesInFlight: opts.batchBytesInFlight,
  });
  const address = await gateway.listen({ port: opts.httpPort ?? 0, host: opts.httpHost ?? "127.0.0.1" });
  const apiUrl = `${address.replace("0.0.0.0", "127.0.0.1").replace("[::]", "127.0.0.1")}/api/v1`;

  return {
    apiUrl,
    rpcUrl: rpc.url,
    gateway,
    async close() {
      // Background work stops while the gateway answers the requests in flight (its modules still
      // serve them): both within the process's shutdown deadline.
      await Promise.all([gateway.close(), ...modules.map((m) => m.stop?.())]);
      await rpc.close();
      await mongo.close();
    },
  };
}
