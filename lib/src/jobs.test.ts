import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { startEmbeddedDb } from "./embedded-db.ts";
import { JobScheduler } from "./jobs.ts";
import { connectMongo } from "./mongo.ts";
import { eventually } from "../../test/support/eventually.ts";
import { capturingLogger } from "../../test/support/log-lines.ts";

test("stopping while holding a job's lock goes on when the database is gone", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "meter-jobs-"));
  const db = await startEmbeddedDb(dir);
  const mongo = await connectMongo(db.url);
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let started = false;
  try {
    const { logger, lines } = capturingLogger("warn");
    const scheduler = new JobScheduler(mongo.db("jobs"), logger, 50, "test");
    await scheduler.init();
    // One at a time: the second job is locked by this process and waits behind the first.
    scheduler.define(
      "hold",
      async () => {
        started = true;
        await held;
      },
      { concurrency: 1 },
    );
    await scheduler.start();
    await scheduler.enqueue("hold", { key: "a" }, new Date());
    await scheduler.enqueue("hold", { key: "b" }, new Date());
    await eventually(() => started, 20_000, "the first job to run");
    await eventually(
      async () => (await mongo.db("jobs").collection("agenda_jobs").countDocuments({ lockedAt: { $ne: null } })) === 2,
      20_000,
      "both jobs locked by this process",
    );
    await db.stop();
    // Unlocking the waiting job fails without the database: stop() still resolves, and says
    // why the locks are left to lapse.
    let stopped = false;
    await scheduler.stop(100).then(() => (stopped = true));
    assert.ok(stopped, "stop() resolved");
    const warned = lines.filter((l) => l.msg === "could not unlock held jobs at shutdown; their locks will lapse");
    assert.is(warned.length, 1, "the failed unlock is logged once");
    assert.ok(warned[0]!.err, "with the database error");
  } finally {
    release();
    await mongo.close();
    await db.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
