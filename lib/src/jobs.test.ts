import type { Db } from "mongodb";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { startEmbeddedDb } from "./embedded-db.ts";
import { randomUUID } from "node:crypto";
import { IdlePoll, JobScheduler, RunLine } from "./jobs.ts";
import { connectMongo } from "./mongo.ts";
import { jobFailures } from "./metrics.ts";
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

test("a run line runs one at a time; a kick during a run brings one more run, and kicks before it starts share it", async () => {
  const line = new RunLine();
  const log: string[] = [];
  let release!: () => void;
  const first = line.run(async () => {
    log.push("first start");
    await new Promise<void>((r) => (release = r));
    log.push("first end");
    return 1;
  });
  let kicks = 0;
  const work = async () => {
    kicks++;
    log.push(`kicked run ${kicks}`);
    return true;
  };
  const a = line.kick(work);
  const b = line.kick(work);
  assert.is(a, b, "a kick made before the waiting run starts shares it");
  await eventually(() => log.includes("first start"), 5_000, "the first run to start");
  release();
  assert.is(await first, 1);
  assert.is(await a, true);
  assert.equal(log, ["first start", "first end", "kicked run 1"], "the kicked run waited for the run in progress, and ran once");
  // Once it ran, a kick starts another run.
  assert.is(await line.kick(work), true);
  assert.is(kicks, 2);
  // A run that fails does not stop the line.
  await line.run(async () => Promise.reject(new Error("boom"))).catch(() => {});
  assert.is(await line.kick(work), true);
  assert.is(kicks, 3);
});

/** A scheduler on a fresh database whose scans are ten minutes apart: only kicks and polls run jobs. */
async function withScheduler(level: "warn" | "error", body: (scheduler: JobScheduler, db: Db) => Promise<void>): Promise<void> {
  const mongo = await connectMongo(await testMongoUrl());
  const { logger } = capturingLogger(level);
  const db = mongo.db(`jobs_${randomUUID()}`);
  const scheduler = new JobScheduler(db, logger, 600_000, "test");
  try {
    await scheduler.init();
    await body(scheduler, db);
  } finally {
    await scheduler.stop(1_000);
    await mongo.close();
  }
}

test("a kicked job runs in this process at once and saves nothing; its runs never overlap those Agenda starts", () =>
  withScheduler("warn", async (scheduler, db) => {
    let runs = 0;
    let inside = 0;
    let overlapped = false;
    scheduler.defineKicked(
      "kicked",
      async (renew) => {
        runs++;
        inside++;
        if (inside > 1) overlapped = true;
        await renew();
        // Long enough for a kick and a polled run to meet, were they not kept apart.
        await new Promise((r) => setTimeout(r, 5));
        inside--;
        return false;
      },
      60_000,
    );
    await scheduler.start();
    scheduler.kick("kicked");
    await eventually(() => runs >= 1, 30_000, "the kicked run");
    assert.is(await db.collection("agenda_jobs").countDocuments({ name: "kicked" }), 0, "a kick saves no job");
    // The repeating run, polled every 20 ms, beside a stream of kicks.
    await scheduler.every("kicked", 20, { key: "every" }, 20);
    const before = runs;
    for (let i = 0; i < 200; i++) {
      scheduler.kick("kicked");
      await new Promise((r) => setImmediate(r));
    }
    await eventually(() => runs >= before + 5, 30_000, "more runs, kicked and polled");
    await eventually(async () => (await db.collection("agenda_jobs").findOne({ name: "kicked", "data.key": "every" }))?.lastFinishedAt != null, 30_000, "a run Agenda started");
    for (let i = 0; i < 50; i++) {
      scheduler.kick("kicked");
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.not.ok(overlapped, "runs of one process never overlapped");
    assert.is(await db.collection("agenda_jobs").countDocuments({ name: "kicked" }), 1, "only the repeating job is saved");
  }));

test("kicks put off by kickSoon share one run, started once the delay passed", () =>
  withScheduler("warn", async (scheduler) => {
    const starts: number[] = [];
    scheduler.defineKicked("soon", async () => void starts.push(performance.now()), 60_000);
    await scheduler.start();
    const first = performance.now();
    for (let i = 0; i < 20; i++) scheduler.kickSoon("soon", 200);
    await eventually(() => starts.length === 1, 30_000, "the run the kicks share");
    assert.ok(starts[0]! - first >= 195, `started ${(starts[0]! - first).toFixed(0)} ms after the first kick`);
    // A later kick starts the second run, and a kick now the third: had the twenty kicks made
    // more than one run, these would be the fourth and the fifth.
    scheduler.kickSoon("soon", 10);
    await eventually(() => starts.length >= 2, 30_000, "the next kick's run");
    scheduler.kick("soon");
    await eventually(() => starts.length >= 3, 30_000, "a kick now");
    assert.is(starts.length, 3, "twenty kicks within the delay made one run");
  }));

test("a failed run is counted by job name (meter_job_failures_total), a kicked one and one Agenda started alike", () =>
  withScheduler("error", async (scheduler) => {
    const failures = async (job: string) => (await jobFailures.get()).values.find((v) => v.labels.task === job)?.value ?? 0;
    let runs = 0;
    scheduler.defineKicked(
      "failing",
      async () => {
        runs++;
        throw new Error("the database went away");
      },
      60_000,
    );
    await scheduler.start();
    // Its series is there at 0 before anything failed: a first failure is a rise Prometheus sees.
    assert.ok((await jobFailures.get()).values.some((v) => v.labels.task === "failing"), "the series exists before any failure");
    const before = await failures("failing");
    scheduler.kick("failing");
    await eventually(async () => (await failures("failing")) === before + 1, 30_000, "the kicked run counted");
    await scheduler.every("failing", 20, { key: "every" }, 20);
    await eventually(async () => (await failures("failing")) >= before + 2, 30_000, "a polled run counted");
    assert.ok(runs >= 2);
  }));

test.run();
