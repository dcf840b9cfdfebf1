import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Db, MongoClient } from "mongodb";
import { startEmbeddedDb } from "@meter/lib/embedded-db";
import { connectMongo } from "@meter/lib/mongo";
import type { Api } from "../../test/support/http.ts";
import { startAllInOne } from "../../test/support/processes.ts";

export interface BenchDatabase {
  url: string;
  /** True on the embedded database (FerretDB over SQLite), false on MONGODB_URL. */
  embedded: boolean;
  /** The embedded database's process id; undefined on MONGODB_URL. */
  pid?: number;
  /** Stops the embedded database and removes its directory; nothing on MONGODB_URL. */
  stop(): Promise<void>;
}

/** The database a benchmark measures on: MONGODB_URL when set, else the embedded database in a temporary directory. */
export async function benchDatabase(name: string): Promise<BenchDatabase> {
  if (process.env.MONGODB_URL) return { url: process.env.MONGODB_URL, embedded: false, stop: async () => {} };
  const dir = await mkdtemp(path.join(os.tmpdir(), `meter-bench-${name}-`));
  const db = await startEmbeddedDb(dir);
  return {
    url: db.url,
    embedded: true,
    pid: db.pid,
    async stop() {
      await db.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * `npm start`'s all-in-one process on a bench database (`benchDatabase(name)`), its databases
 * named `bench_<name>_<time>_<service>` (`dbPrefix`), with `env` on top. An uncaught error of
 * the bench kills the process and stops the database; `stop()` ends both after a run.
 */
export async function benchAllInOne(name: string, env: Record<string, string> = {}) {
  const database = await benchDatabase(name);
  const dbPrefix = `bench_${name}_${Date.now()}`;
  const aio = await startAllInOne({ MONGODB_URL: database.url, MONGODB_DB_PREFIX: dbPrefix, ...env });
  process.on("uncaughtException", async (err) => {
    console.error(err);
    await aio.proc.stop("SIGKILL");
    await database.stop();
    process.exit(1);
  });
  let client: Promise<MongoClient> | undefined;
  return {
    ...aio,
    database,
    dbPrefix,
    /** A service's own database, to seed its collections directly (one client, opened on first use, closed by stop()). */
    async serviceDb(service: string): Promise<Db> {
      client ??= connectMongo(database.url);
      return (await client).db(`${dbPrefix}_${service}`);
    },
    async stop() {
      await (await client)?.close();
      await aio.proc.stop();
      await database.stop();
    },
  };
}

/** A product made through the API with `plans` configured (in their order); throws on any answer but 201. */
export async function productWithPlans(anon: Api, name: string, plans: Record<string, unknown>[]) {
  const product = await anon.post("/products", { name });
  if (product.status !== 201) throw new Error(`product: ${product.status} ${JSON.stringify(product.body)}`);
  const apiKey: string = product.body.api_key;
  const api = anon.withKey(apiKey);
  const configured = await api.post("/config/plans", { plans });
  if (configured.status !== 201) throw new Error(`plans: ${configured.status} ${JSON.stringify(configured.body)}`);
  return { productId: product.body.id as string, apiKey, api, plans: configured.body.plans as { id: string; name: string }[] };
}
