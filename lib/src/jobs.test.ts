import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { startEmbeddedDb } from "./embedded-db.ts";
import { JobScheduler } from "./jobs.ts";
import { createLogger } from "./logger.ts";
import { connectMongo } from "./mongo.ts";
import { eventually } from "../../test/support/eventually.ts";

test("stopping while holding a job's lock goes on when the database is gone", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "meter-jobs-"));
  const db = await startEmbeddedDb(dir);
  const mongo = await connectMongo(db.url);
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let started = false;
  try {
    const scheduler = new JobScheduler(mongo.db("jobs"), createLogger("test", "silent"), 50, "test");
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
    // Unlocking the waiting job fails without the database: stop() still resolves.
    await scheduler.stop(100);
  } finally {
    release();
    await mongo.close();
    await db.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
