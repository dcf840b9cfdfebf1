import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { startAllInOne } from "./support/processes.ts";

// No MONGODB_URL: the embedded database starts, keeping its files under DATA_DIR.
const startInDataDir = (dataDir: string) => startAllInOne({ MONGODB_URL: undefined, DATA_DIR: dataDir });

test("npm start's embedded database keeps data across restarts", async () => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "meter-data-"));
  try {
    const first = await startInDataDir(dataDir);
    const created = await first.api.post("/products", { name: "Durable" });
    assert.is(created.status, 201);
    assert.is(await first.proc.stop(), 0, first.proc.output());

    const second = await startInDataDir(dataDir);
    const list = await second.api.withKey(created.body.api_key).get("/products");
    assert.is(list.status, 200);
    assert.is(list.body[0].id, created.body.id);
    assert.is(await second.proc.stop(), 0, second.proc.output());
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});

test.run();
