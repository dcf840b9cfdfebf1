import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { startEmbeddedDb } from "./embedded-db.ts";
import { randomUUID } from "node:crypto";
import { IdlePoll, JobScheduler } from "./jobs.ts";
import { connectMongo } from "./mongo.ts";
import { eventually } from "../../test/support/eventually.ts";
import { capturingLogger } from "../../test/support/log-lines.ts";
import { testMongoUrl } from "../../test/support/database.ts";

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

test("an idle poll doubles its pause while it finds nothing, up to its maximum; work brings it back to the interval", async () => {
  const pauses: number[] = [];
  let poll!: IdlePoll;
  const six = new Promise<void>((resolve) => {
    poll = new IdlePoll(
      () => {
        pauses.push(poll.pauseMs);
        if (pauses.length === 6) resolve();
      },
      1,
      8,
    );
  });
  poll.start();
  await six;
  poll.busy();
  assert.is(poll.pauseMs, 1, "work found or announced");
  poll.stop();
  assert.equal(pauses.slice(0, 6), [2, 4, 8, 8, 8, 8]);
});

test("between two scans, a job enqueued here starts at once and a polled repeating job keeps running", async () => {
  const mongo = await connectMongo(await testMongoUrl());
  const { logger } = capturingLogger("warn");
  // Scans ten minutes apart: the test ends long before Agenda's second scan.
  const scheduler = new JobScheduler(mongo.db(`jobs_${randomUUID()}`), logger, 600_000, "test");
  try {
    await scheduler.init();
    let ran = false;
    let polls = 0;
    scheduler.define("once", async () => {
      ran = true;
    });
    scheduler.define("poll", async () => {
      polls++;
      return false;
    });
    await scheduler.start();
    await scheduler.enqueue("once", { key: "a" }, new Date());
    await eventually(() => ran, 30_000, "the enqueued job to run");
    await scheduler.every("poll", 50, { key: "every" }, 200);
    await eventually(() => polls >= 3, 30_000, "the polled job to run three times");
  } finally {
    await scheduler.stop(1_000);
    await mongo.close();
  }
});

test.run();
