import os from "node:os";
import { randomBytes } from "node:crypto";
import type { Db } from "mongodb";
import { Agenda, type Job } from "agenda";
import { MongoBackend } from "@agendajs/mongo-backend";
import type { Logger } from "./logger.ts";
import { collectionBacklog, trackJobQueue } from "./metrics.ts";
import { deleteInRounds, isDuplicateKeyError } from "./mongo.ts";

/** Every service keeps its Agenda jobs in this collection of its own database. */
export const JOBS_COLLECTION = "agenda_jobs";

/** Every job payload carries its idempotency key; the jobs collection is unique on (name, key). */
export interface KeyedPayload {
  key: string;
}

/**
 * A service's Agenda instance, stored in its own database. One addition makes it safe with
 * several replicas on MongoDB and on the embedded FerretDB: a unique index on (name, data.key),
 * so enqueueing the same work twice keeps one job. Handlers still make their effect idempotent
 * (webhooks claims each attempt, analytics recomputes from its ledger), because a worker that
 * dies mid-run leaves its job locked until the lock lifetime passes, and then another runs it
 * again from the start.
 */
export class JobScheduler {
  readonly agenda: Agenda;
  private started = false;
  /** Handlers running in this process, awaited on stop. */
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    processEveryMs: number,
    service: string,
  ) {
    this.agenda = new Agenda({
      backend: new MongoBackend({ mongo: db, collection: JOBS_COLLECTION }),
      name: `${service}-${os.hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`,
      processEvery: processEveryMs,
      removeOnComplete: true,
      defaultConcurrency: 10,
      maxConcurrency: 50,
    });
    this.agenda.on("error", (err) => this.logger.warn({ err }, "job scheduler error"));
    trackJobQueue(service, collectionBacklog(db.collection(JOBS_COLLECTION), "nextRunAt", () => ({ nextRunAt: { $lte: new Date() }, lockedAt: null })));
  }

  async init(): Promise<void> {
    await this.db.collection(JOBS_COLLECTION).createIndex({ name: 1, "data.key": 1 }, { unique: true, name: "unique_job_key" });
  }

  define<T extends KeyedPayload>(
    name: string,
    handler: (job: Job<T>) => Promise<void>,
    opts: Parameters<Agenda["define"]>[2] = {},
  ): void {
    this.agenda.define<T>(
      name,
      async (job) => {
        const run = handler(job);
        this.running.add(run);
        try {
          await run;
        } catch (err) {
          this.logger.warn({ err, job: name, key: job.attrs.data.key }, "job failed");
          throw err;
        } finally {
          this.running.delete(run);
        }
      },
      opts,
    );
  }

  /** Schedules the job at `at` unless a job with the same name and key exists. */
  async enqueue<T extends KeyedPayload>(name: string, data: T, at: Date): Promise<void> {
    try {
      await this.agenda.create(name, data).schedule(at).unique({ "data.key": data.key }, { insertOnly: true }).save();
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
  }

  /** A repeating job (one per name across replicas), on a UTC cron or every `interval` ms. */
  async every<T extends KeyedPayload>(name: string, interval: string | number, data: T): Promise<void> {
    try {
      await this.agenda.every(interval, name, data, { timezone: "UTC", skipImmediate: true });
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
  }

  /**
   * Deletes one-off jobs that ended before `before` and will not run again: Agenda removes a
   * job that succeeds (removeOnComplete) but keeps one that failed for good (no next run).
   * Repeating jobs and locked ones are never touched.
   */
  async purgeEnded(before: Date): Promise<number> {
    return deleteInRounds(this.db.collection(JOBS_COLLECTION), { nextRunAt: null, lockedAt: null, repeatInterval: null, lastFinishedAt: { $lt: before } });
  }

  async cancel(name: string, data: Record<string, unknown>): Promise<number> {
    return this.agenda.cancel({ name, data });
  }

  async start(): Promise<void> {
    await this.agenda.start();
    this.started = true;
  }

  /**
   * Stops taking jobs, hands back the ones locked but not started (Agenda's drain() would keep
   * them locked for a whole lock lifetime, delaying them on the other replicas), then lets the
   * running ones finish for up to `graceMs`.
   */
  async stop(graceMs: number): Promise<void> {
    if (!this.started) return;
    this.started = false;
    try {
      await this.agenda.stop(false);
    } catch (err) {
      // Unlocking the jobs this process holds needs the database; when it is unreachable
      // (shutting down during an outage) their locks lapse by lockLifetime instead, and
      // shutdown goes on.
      this.logger.warn({ err }, "could not unlock held jobs at shutdown; their locks will lapse");
    }
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
    await Promise.race([Promise.allSettled(this.running), grace]);
    clearTimeout(timer);
  }
}
