// The launchers' supervisors giving up, and shutdown with the database down.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { startEmbeddedDb } from "@meter/lib/embedded-db";
import { childPids } from "./support/chaos.ts";
import { testMongoUrl } from "./support/database.ts";
import { eventually } from "./support/eventually.ts";
import { freePort, freePortRange, spawnEntry, startAllInOne } from "./support/processes.ts";

const exited = (child: import("node:child_process").ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.once("exit", (code) => resolve(code));
  });

test("npm start exits with code 1, saying why, once its database failed five times within a minute", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "meter-giveup-"));
  try {
    const aio = await startAllInOne({ MONGODB_URL: undefined, DATA_DIR: dir });
    const exit = exited(aio.proc.child);
    const killed = new Set<number>();
    for (let i = 0; i < 5; i++) {
      // Each new database process, once it is up, is killed again.
      const pid = await eventually(() => childPids(aio.proc.child.pid!, "embedded-db").find((p) => !killed.has(p)), 30_000, `database process ${i + 1}`);
      killed.add(pid);
      process.kill(pid, "SIGKILL");
    }
    assert.is(await exit, 1, aio.proc.output());
    // The last kill may meet the process before it is ready: "could not start" then.
    assert.match(aio.proc.output(), /exiting: embedded database failed 5 times within 60 s \(last: (exited with signal SIGKILL|could not start: embedded database exited early with signal SIGKILL)\)/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("npm run start:split exits with code 1, saying why, when a service keeps failing to start", async () => {
  const proc = spawnEntry("cmd/split.ts", {
    PORT: String(await freePort()),
    RPC_BASE_PORT: String(await freePortRange(5)),
    MONGODB_URL: await testMongoUrl(),
    MONGODB_DB_PREFIX: `giveup${randomBytes(4).toString("hex")}`,
    // Only the analytics process reads it: it refuses to start, every time.
    ROLL_INTERVAL_MS: "1",
  });
  const code = await exited(proc.child);
  assert.is(code, 1, proc.output());
  assert.match(proc.output(), /exiting: analytics failed 5 times within 60 s \(last: exited with code 1\)/);
});

test("SIGTERM with the database down: requests in flight are answered 503, and the process exits by itself", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "meter-shutdown-"));
  const db = await startEmbeddedDb(path.join(dir, "db"));
  try {
    const aio = await startAllInOne({ MONGODB_URL: db.url, MONGODB_DB_PREFIX: `down${randomBytes(4).toString("hex")}`, AUTH_CACHE_TTL_MS: "0" });
    const created = await aio.api.post("/products", { name: "Down" });
    assert.is(created.status, 201);
    await db.stop();
    const api = aio.api.withKey(created.body.api_key);
    // Each waits for the database (up to the driver's 5 s server selection) when SIGTERM comes.
    const inFlight = Array.from({ length: 4 }, (_, i) =>
      api.get("/products", { headers: { "x-request-id": `in-flight-${i}` } }).then(
        (r) => ({ status: r.status, retryAfter: r.headers.get("retry-after") }),
        () => ({ status: 0, retryAfter: null }),
      ),
    );
    // SIGTERM once the gateway has all four (its log names each by its request id), not after a guessed time.
    await eventually(async () => [0, 1, 2, 3].every((i) => aio.proc.output().includes(`"in-flight-${i}"`)), 10_000, "the four requests received");
    const code = await aio.proc.stop("SIGTERM");
    // spawnEntry's stop() kills with SIGKILL after 15 s (exit code null): it exited by itself.
    assert.ok(code === 0 || code === 1, `exit code ${code}\n${aio.proc.output()}`);
    assert.equal(await Promise.all(inFlight), Array.from({ length: 4 }, () => ({ status: 503, retryAfter: "1" })), aio.proc.output());
  } finally {
    await db.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
