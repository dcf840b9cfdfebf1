// A service whose database is not reachable when it starts (MongoDB starting beside it, an
// outage) waits for it instead of exiting: a crash loop's restart back-off would keep it down
// long after the database is back.
import { randomBytes } from "node:crypto";
import net from "node:net";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { TenancyService } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { testMongoUrl } from "./support/database.ts";
import { eventually } from "./support/eventually.ts";
import { Api } from "./support/http.ts";
import { freePort, spawnEntry, type Spawned } from "./support/processes.ts";

/** Forwards connections on `port` to the test database, once started. */
function forwarder(port: number, target: URL): { start(): Promise<void>; stop(): Promise<void> } {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 27017), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => s.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  return {
    start: () => new Promise((resolve) => server.listen(port, "127.0.0.1", resolve)),
    stop: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * Starts `entry` on a MongoDB address where nothing listens yet, waits until it says it waits
 * (and has not exited), starts the database there, then runs `serves`; stops it after (code 0).
 */
async function startedBeforeItsDatabase(entry: string, env: (mongoUrl: string) => Record<string, string>, serves: (proc: Spawned) => Promise<void>): Promise<void> {
  const dbPort = await freePort();
  const target = new URL(await testMongoUrl());
  const proxy = forwarder(dbPort, target);
  const proc = spawnEntry(entry, { LOG_LEVEL: "info", ...env(`mongodb://127.0.0.1:${dbPort}/${target.search}`) });
  const explained = (err: Error) => {
    throw new Error(`${err.message}\n${proc.output()}`);
  };
  try {
    // Nothing listens where the database should be: the process says it waits, and does not exit.
    await eventually(() => proc.output().includes("the database is not reachable yet; retrying"), 60_000, "the first failed attempt").catch(explained);
    assert.is(proc.child.exitCode, null, proc.output());
    await proxy.start();
    await serves(proc).catch(explained);
  } finally {
    const code = await proc.stop();
    await proxy.stop();
    assert.is(code, 0, `exit code\n${proc.output()}`);
  }
}

test("a split service started before its database waits for it, then serves", async () => {
  const rpcPort = await freePort();
  await startedBeforeItsDatabase("services/tenancy/main.ts", (url) => ({ PORT: String(rpcPort), MONGODB_URL: url, MONGODB_DB: `late${randomBytes(4).toString("hex")}` }), async (proc) => {
    await eventually(() => proc.output().includes("tenancy service listening"), 90_000, "the service to start once the database answers");
    const client = createClient(TenancyService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${rpcPort}` }));
    const created = await client.createProduct({ name: "Late Co" });
    assert.match(created.apiKey, /^mk_/);
    assert.is(created.product!.name, "Late Co");
  });
});

test("npm start on a MongoDB not up yet waits for it, then serves", async () => {
  const port = await freePort();
  const rpcPort = await freePort();
  await startedBeforeItsDatabase("cmd/all-in-one.ts", (url) => ({ PORT: String(port), RPC_PORT: String(rpcPort), MONGODB_URL: url, MONGODB_DB_PREFIX: `late${randomBytes(4).toString("hex")}`, WEBHOOKS_ALLOW_DEVELOPMENT_KEY: "true" }), async () => {
    const api = new Api(`http://127.0.0.1:${port}/api/v1`);
    await eventually(async () => (await api.get("/health").catch(() => undefined))?.body.status === "ok", 90_000, "all-in-one to serve");
    assert.is((await api.post("/products", { name: "Late Co" })).status, 201);
  });
});

test("a service waiting for its database stops at once on SIGTERM", async () => {
  const proc = spawnEntry("services/tenancy/main.ts", {
    LOG_LEVEL: "info",
    PORT: String(await freePort()),
    MONGODB_URL: `mongodb://127.0.0.1:${await freePort()}/`,
    MONGODB_DB: "never",
  });
  await eventually(() => proc.output().includes("the database is not reachable yet; retrying"), 60_000, "the first failed attempt").catch((err) => {
    throw new Error(`${err.message}\n${proc.output()}`);
  });
  assert.is(await proc.stop(), 0, proc.output());
  assert.match(proc.output(), /stopped while waiting for the database/);
});

test.run();
