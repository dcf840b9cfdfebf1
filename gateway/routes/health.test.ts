import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { startEmbeddedDb } from "@meter/lib/embedded-db";
import { createLogger } from "@meter/lib/logger";
import { startStack } from "../../cmd/stack.ts";
import { Api } from "../../test/support/http.ts";

test("health is degraded, not an error, when the database goes away", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "meter-health-"));
  const db = await startEmbeddedDb(dir);
  const stack = await startStack({ mongoUrl: db.url, dbPrefix: "health", logger: createLogger("test", "silent") });
  try {
    const api = new Api(stack.apiUrl);
    assert.equal((await api.get("/health")).body, { status: "ok", database: "connected" });
    await db.stop();
    const res = await api.get("/health");
    assert.is(res.status, 200);
    assert.equal(res.body, { status: "degraded", database: "disconnected" });
    // Routes that need the database fail cleanly meanwhile.
    const create = await api.post("/products", { name: "While down" });
    assert.ok(create.status >= 500, `status ${create.status}`);
    assert.type(create.body.detail, "string");
  } finally {
    await stack.close();
    await db.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
