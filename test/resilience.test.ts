// Parts killed under load (kill -9, as an out-of-memory kill would): the embedded database of
// `npm start`, each process of `npm run start:split`, and the whole `npm start` process.
// After each, usage, gate events, thresholds (exactly once) and deliveries are exact, and no
// request got a 500 (503s and refused connections are retried, as the client libraries do).
import { writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { Receiver } from "../services/webhooks/testing/receiver.ts";
import { Acknowledged, Tally, audit, chaosProduct, childPids, ingest, ingestStruckOnce, outboxesEmpty, withScene } from "./support/chaos.ts";
import { testMongoUrl } from "./support/database.ts";
import { eventually } from "./support/eventually.ts";
import { Api } from "./support/http.ts";
import { freePort, freePortRange, spawnEntry, startAllInOne, type AllInOne, type Spawned } from "./support/processes.ts";

/**
 * Short recovery age: a job whose claimant was killed is completed within seconds. Scans for
 * jobs scheduled elsewhere (IDLE_POLL_MAX_MS, 30 s by default) at the same pace, since a job
 * the killed process had locked is found again by a scan.
 */
const FAST_RECOVERY = { LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? "warn", WEBHOOKS_ALLOW_INSECURE_URLS: "true", RECOVERY_AFTER_MS: "2000", RELAY_INTERVAL_MS: "200", IDLE_POLL_MAX_MS: "2000" };

/** Adds the end of a process's output to an error, to see why. */
const withOutput = (proc: Spawned) => (err: Error): never => {
  if (process.env.CHAOS_LOG) writeFileSync(process.env.CHAOS_LOG, proc.output());
  throw new Error(`${err.message}\n${proc.output().slice(-6_000)}`);
};

test("npm start: the embedded database killed under ingestion load is restarted; nothing lost or doubled", () =>
  withScene(async (dir, rx) => {
    const aio = await startAllInOne({ MONGODB_URL: undefined, DATA_DIR: dir, ...FAST_RECOVERY });
    try {
      const p = await chaosProduct(aio.api, rx, 4);
      const [dbPid] = childPids(aio.proc.child.pid!, "embedded-db");
      assert.ok(dbPid, "the embedded database runs as a child process");
      const ack = new Acknowledged();
      const tally = new Tally();
      await ingestStruckOnce(p, ack, tally, () => process.kill(dbPid!, "SIGKILL"));
      const restarted = await eventually(() => childPids(aio.proc.child.pid!, "embedded-db").find((pid) => pid !== dbPid), 30_000, "a new database process");
      assert.ok(restarted);
      const result = await audit(p, ack, rx, () => outboxesEmpty(`${aio.rpcBase}/metrics`)).catch(withOutput(aio.proc));
      assert.equal(result.problems, []);
      assert.is(tally.count(500), 0, `no 500 during the outage (${tally.refusals()})`);
      assert.equal((await aio.api.get("/health")).body, { status: "ok", database: "connected" });
      assert.match(aio.proc.output(), /embedded database exited with signal SIGKILL; restarting/);
    } finally {
      assert.is(await aio.proc.stop(), 0, aio.proc.output());
    }
  }));

test("npm start killed under ingestion load and started again on its data directory; nothing lost or doubled", () =>
  withScene(async (dir, rx) => {
    const env = { MONGODB_URL: undefined, DATA_DIR: dir, ...FAST_RECOVERY, PORT: String(await freePort()), RPC_PORT: String(await freePort()) };
    let aio = await startAllInOne(env);
    try {
      const p = await chaosProduct(aio.api, rx, 4);
      const ack = new Acknowledged();
      const tally = new Tally();
      let restarted: Promise<void> | undefined;
      let second: Promise<AllInOne> | undefined;
      await ingestStruckOnce(p, ack, tally, () => {
        aio.proc.child.kill("SIGKILL");
        // An outer supervisor starts it again on the same ports and data directory.
        restarted = new Promise<void>((resolve) => aio.proc.child.once("exit", () => resolve())).then(async () => {
          second = startAllInOne(env);
          aio = await second;
        });
      });
      await restarted;
      assert.ok(second, "started again");
      const result = await audit(p, ack, rx, () => outboxesEmpty(`${aio.rpcBase}/metrics`)).catch(withOutput(aio.proc));
      assert.equal(result.problems, []);
      assert.is(tally.count(500), 0, `no 500 (${tally.refusals()})`);
      assert.ok(tally.refusedConnections > 0, "the clients met the process down");
    } finally {
      assert.is(await aio.proc.stop(), 0, aio.proc.output());
    }
  }));

test("npm run start:split: each service process killed under load is restarted; nothing lost or doubled", async () => {
  const rx = await new Receiver().start();
  const port = await freePort();
  const base = await freePortRange(5);
  const proc = spawnEntry("cmd/split.ts", {
    PORT: String(port),
    RPC_BASE_PORT: String(base),
    MONGODB_URL: await testMongoUrl(),
    MONGODB_DB_PREFIX: `chaos${randomBytes(4).toString("hex")}`,
    ...FAST_RECOVERY,
  });
  const api = new Api(`http://127.0.0.1:${port}/api/v1`);
  try {
    await eventually(async () => (await api.get("/health")).body.status === "ok", 90_000, "split mode to serve").catch((err) => {
      throw new Error(`${err.message}\n${proc.output()}`);
    });
    const p = await chaosProduct(api, rx, 4);
    const services = ["ingestion", "plans", "tenancy", "analytics", "webhooks"];
    const killed: number[] = [];
    const ack = new Acknowledged();
    const tally = new Tally();
    await ingest(p, ack, tally, {
      batches: 60,
      perBatch: 25,
      concurrency: 4,
      onBatch: (n) => {
        const name = services[n / 10 - 1];
        if (n % 10 !== 0 || !name) return;
        const [pid] = childPids(proc.child.pid!, `services/${name}/main.ts`);
        assert.ok(pid, `${name} process`);
        killed.push(pid!);
        process.kill(pid!, "SIGKILL");
      },
    });
    assert.is(killed.length, services.length);
    for (const name of services) {
      await eventually(() => childPids(proc.child.pid!, `services/${name}/main.ts`).some((pid) => !killed.includes(pid)), 30_000, `${name} restarted`);
    }
    const result = await audit(p, ack, rx, () => outboxesEmpty(`http://127.0.0.1:${base + 2}/metrics`)).catch(withOutput(proc));
    assert.equal(result.problems, []);
    assert.is(tally.count(500), 0, `no 500 (${tally.refusals()})`);
    await eventually(async () => (await api.get("/health")).body.status === "ok", 30_000, "health ok again");
  } finally {
    await rx.stop();
    assert.is(await proc.stop(), 0, proc.output());
  }
});

test.run();
