import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startEmbeddedDb } from "@meter/lib/embedded-db";

export interface BenchDatabase {
  url: string;
  /** True on the embedded database (FerretDB over SQLite), false on MONGODB_URL. */
  embedded: boolean;
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
    async stop() {
      await db.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
