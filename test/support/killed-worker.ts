// A job worker killed while it holds an Agenda job, for the tests that another scheduler picks
// the job up: the worker's side (its database, a fault that hangs) and the test's (start it,
// wait until it holds the job, kill it there).
import type { Db, Document, WithId } from "mongodb";
import * as assert from "uvu/assert";
import { JOBS_COLLECTION } from "@meter/lib/jobs";
import { createLogger, type Logger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { eventually } from "./eventually.ts";
import { spawnEntry } from "./processes.ts";

/** In the worker: the database the test named (MONGODB_URL, MONGODB_DB). */
async function workerDb(): Promise<Db> {
  return (await connectMongo(process.env.MONGODB_URL!)).db(process.env.MONGODB_DB!);
}

/** In the worker: starts the service `create` makes on the test's database, quiet, with its jobs running. */
export async function startWorker<O extends { db: Db; logger: Logger }>(
  name: string,
  create: (opts: O) => Promise<{ start?(): Promise<void> }>,
  opts: Omit<O, "db" | "logger">,
): Promise<void> {
  const module = await create({ ...opts, db: await workerDb(), logger: createLogger(name, "silent") } as O);
  await module.start?.();
}

/** In the worker: a fault that prints "holding" and never returns, so that the kill lands inside the job. */
export function holdForever(): Promise<void> {
  process.stdout.write("holding\n");
  return new Promise<void>(() => {});
}

/**
 * In the test: runs `entry` on `db` (named `dbName` at `url`), waits until it holds the job
 * named `job`, kills it with SIGKILL and answers the job's document as the worker held it.
 */
export async function killWhileHolding(
  db: Db,
  w: { entry: string; url: string; dbName: string; env: Record<string, string>; job: string; timeoutMs: number },
): Promise<WithId<Document>> {
  const worker = spawnEntry(w.entry, { MONGODB_URL: w.url, MONGODB_DB: w.dbName, ...w.env });
  try {
    await eventually(() => worker.output().includes("holding"), w.timeoutMs, `the worker to hold the ${w.job} job`).catch((err: Error) => {
      throw new Error(`${err.message}; worker output: ${worker.output()}`);
    });
    const held = await db.collection(JOBS_COLLECTION).findOne({ name: w.job, lockedAt: { $ne: null } });
    assert.ok(held, `the worker holds the ${w.job} job`);
    return held;
  } finally {
    await worker.stop("SIGKILL");
  }
}
