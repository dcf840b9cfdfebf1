import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { DEVELOPMENT_SECRET_KEY } from "../services/webhooks/domain/secrets.ts";
import { spawnEntry, startAllInOne } from "./support/processes.ts";

// No MONGODB_URL: the embedded database starts, keeping its files under DATA_DIR.
const startInDataDir = (dataDir: string, env: Record<string, string | undefined> = {}) =>
  startAllInOne({ MONGODB_URL: undefined, DATA_DIR: dataDir, WEBHOOKS_ALLOW_DEVELOPMENT_KEY: undefined, ...env });

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

test("npm start on its embedded database seals webhook signing secrets with a key of its own, kept in DATA_DIR", async () => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "meter-key-"));
  const insecure = { WEBHOOKS_ALLOW_INSECURE_URLS: "true" };
  try {
    // An install from before: its secrets sealed with the public development key.
    const before = await startInDataDir(dataDir, { ...insecure, WEBHOOKS_SECRET_KEY: DEVELOPMENT_SECRET_KEY.toString("hex") });
    const product = await before.api.post("/products", { name: "Keyed" });
    const api = before.api.withKey(product.body.api_key);
    const endpoint = await api.post("/webhooks/endpoints", { url: "http://127.0.0.1:9/hook", subscribed_events: ["usage.threshold.80"] });
    assert.is(endpoint.status, 201);
    assert.is(await before.proc.stop(), 0, before.proc.output());

    const first = await startInDataDir(dataDir, insecure);
    const file = path.join(dataDir, "webhooks-secret.key");
    const key = (await readFile(file, "utf8")).trim();
    assert.match(key, /^[0-9a-f]{64}$/);
    assert.is.not(key, DEVELOPMENT_SECRET_KEY.toString("hex"));
    assert.is((await stat(file)).mode & 0o777, 0o600, "readable by its owner only");
    // The secret sealed before opens, and the pass at start found it under the old key and sealed it again.
    const secret = (await first.api.withKey(product.body.api_key).get(`/webhooks/endpoints/${endpoint.body.id}/secret`)).body.secret;
    assert.is(secret, endpoint.body.secret);
    assert.match(await (await fetch(`${first.rpcBase}/metrics`)).text(), /meter_webhook_secrets\{key="previous"\} 1/);
    assert.is(await first.proc.stop(), 0, first.proc.output());

    // The next start reads the same key, and finds the secret sealed with it.
    const second = await startInDataDir(dataDir, insecure);
    assert.is((await second.api.withKey(product.body.api_key).get(`/webhooks/endpoints/${endpoint.body.id}/secret`)).body.secret, secret);
    const series = await (await fetch(`${second.rpcBase}/metrics`)).text();
    assert.match(series, /meter_webhook_secrets\{key="current"\} 1/);
    assert.match(series, /meter_webhook_secrets\{key="previous"\} 0/);
    assert.is(await second.proc.stop(), 0, second.proc.output());
    assert.is((await readFile(file, "utf8")).trim(), key);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});

test("npm start on a database of its own refuses to start without a webhooks key", async () => {
  const proc = spawnEntry("cmd/all-in-one.ts", { MONGODB_URL: "mongodb://127.0.0.1:1/", PORT: "0", RPC_PORT: "0" });
  const code = await new Promise<number | null>((resolve) => proc.child.once("exit", resolve));
  assert.is(code, 1, proc.output());
  assert.match(proc.output(), /WEBHOOKS_SECRET_KEY is unset/);
});

test.run();
