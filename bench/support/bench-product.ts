import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startEmbeddedDb } from "@meter/lib/embedded-db";
import { createLogger } from "@meter/lib/logger";
import { startStack, type StackOptions } from "../../cmd/stack.ts";
import { Api } from "../../test/support/http.ts";

/**
 * The whole stack in-process, on MONGODB_URL or else the embedded database in a temporary
 * directory, and one product to measure as. `close()` stops both and removes the directory.
 */
export async function benchProduct(name: string, opts: Partial<StackOptions> = {}) {
  const dir = process.env.MONGODB_URL ? undefined : await mkdtemp(path.join(os.tmpdir(), `meter-bench-${name}-`));
  const embedded = dir ? await startEmbeddedDb(dir) : undefined;
  const stack = await startStack({ mongoUrl: process.env.MONGODB_URL ?? embedded!.url, dbPrefix: `b${name}${Date.now()}`, logger: createLogger("bench", "fatal"), ...opts });
  const created = await new Api(stack.apiUrl).post("/products", { name: `bench ${name}` });
  const apiKey: string = created.body.api_key;
  return {
    stack,
    apiKey,
    api: new Api(stack.apiUrl, apiKey),
    /** Which database the figures are from. */
    database: embedded ? "embedded FerretDB" : "MONGODB_URL",
    async close() {
      await stack.close();
      await embedded?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}
