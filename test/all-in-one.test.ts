import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { Api } from "./support/http.ts";
import { freePort, spawnEntry } from "./support/processes.ts";
import { eventually } from "./support/eventually.ts";

async function startAllInOne(dataDir: string) {
  const port = await freePort();
  // No MONGODB_URL: the embedded database starts, keeping its files under DATA_DIR.
  const proc = spawnEntry("cmd/all-in-one.ts", {
    MONGODB_URL: undefined,
    DATA_DIR: dataDir,
    PORT: String(port),
    RPC_PORT: String(await freePort()),
  });
  const api = new Api(`http://127.0.0.1:${port}/api/v1`);
  await eventually(async () => (await api.get("/health")).body.status === "ok", 90_000, "all-in-one to serve").catch((err) => {
    throw new Error(`${err.message}\n${proc.output()}`);
  });
  return { proc, api };
}

test("npm start's embedded database keeps data across restarts", async () => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "meter-data-"));
  try {
    const first = await startAllInOne(dataDir);
    const created = await first.api.post("/products", { name: "Durable" });
    assert.is(created.status, 201);
    assert.is(await first.proc.stop(), 0, first.proc.output());

    const second = await startAllInOne(dataDir);
    const list = await second.api.withKey(created.body.api_key).get("/products");
    assert.is(list.status, 200);
    assert.is(list.body[0].id, created.body.id);
    assert.is(await second.proc.stop(), 0, second.proc.output());
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});

test.run();
