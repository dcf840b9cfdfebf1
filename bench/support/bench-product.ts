import { randomUUID } from "node:crypto";
import { Type, loadConfig, productConcurrencyFields } from "@meter/lib/config";
import { createLogger } from "@meter/lib/logger";
import { startStack, type StackOptions } from "../../cmd/stack.ts";
import { Api } from "../../test/support/http.ts";
import { benchDatabase } from "./database.ts";

/**
 * The whole stack in-process, on MONGODB_URL or else the embedded database in a temporary
 * directory, and one product to measure as. `close()` stops both and removes the directory.
 * The gateway and the services call each other in this process, as `npm start` wires them
 * (RPC_IN_PROCESS); `BENCH_RPC=grpc` sends those calls over the internal gRPC port instead, as
 * the tests do. INGESTION_PRODUCT_CONCURRENCY bounds a product's batches in the gateway and the
 * ingestion service as it does for `npm start`.
 */
export async function benchProduct(name: string, opts: Partial<StackOptions> = {}) {
  const database = await benchDatabase(name);
  const mongoUrl = database.url;
  const dbPrefix = `b${name}${Date.now()}`;
  const inProcessRpc = process.env.BENCH_RPC !== "grpc";
  // Read and checked as the all-in-one reads it, for the gateway's admission and the ingestion service's writes alike.
  const { INGESTION_PRODUCT_CONCURRENCY: concurrency } = loadConfig(Type.Object({ INGESTION_PRODUCT_CONCURRENCY: productConcurrencyFields.INGESTION_PRODUCT_CONCURRENCY }));
  const stack = await startStack({
    mongoUrl,
    dbPrefix,
    logger: createLogger("bench", "fatal"),
    inProcessRpc,
    batchConcurrency: concurrency,
    ...opts,
    services: { ...opts.services, ingestion: { productWriteConcurrency: concurrency, ...opts.services?.ingestion } },
  });
  const created = await new Api(stack.apiUrl).post("/products", { name: `bench ${name}` });
  const apiKey: string = created.body.api_key;
  return {
    stack,
    apiKey,
    productId: created.body.id as string,
    /** Where the stack's databases are: `<dbPrefix>_<service>` at mongoUrl. */
    mongoUrl,
    dbPrefix,
    api: new Api(stack.apiUrl, apiKey),
    /** Which database the figures are from. */
    database: database.embedded ? "embedded FerretDB" : "MONGODB_URL",
    /** The embedded database's process (undefined on MONGODB_URL). */
    get databasePid() {
      return database.pid;
    },
    async close() {
      await stack.close();
      await database.stop();
    },
  };
}

const DAY = 86_400_000;

/** A plan of random name with `fields`; its id. */
export async function benchPlan(api: Api, fields: Record<string, unknown>): Promise<string> {
  const res = await api.post("/config/plans", { plans: [{ name: `p-${randomUUID()}`, ...fields }] });
  return res.body.plans[0].id;
}

/** A user on `planId` in a period that began a day ago and ends in 20 days; its id. */
export async function benchUser(api: Api, planId: string, id = `u-${randomUUID()}`): Promise<string> {
  await api.post("/users", { external_user_id: id });
  await api.post(`/users/${id}/subscription`, {
    plan_id: planId,
    period_start: new Date(Date.now() - DAY).toISOString(),
    period_end: new Date(Date.now() + 20 * DAY).toISOString(),
  });
  return id;
}
