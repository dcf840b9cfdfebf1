import os from "node:os";
import { randomBytes } from "node:crypto";
import type { Db } from "mongodb";
import { Agenda, InMemoryNotificationChannel, type Job, type JobId, type JobNotification } from "agenda";
import { MongoBackend } from "@agendajs/mongo-backend";
import type { Logger } from "./logger.ts";
import { collectionBacklog, jobFailures, seriesAtZero, trackJobQueue } from "./metrics.ts";
import { deleteInRounds, isDuplicateKeyError } from "./mongo.ts";

/** Every service keeps its Agenda jobs in this collection of its own database. */
export const JOBS_COLLECTION = "agenda_jobs";

/** Every job payload carries its idempotency key; the jobs collection is unique on (name, key). */
export interface KeyedPayload {
  key: string;
}

/**
 * Hands the jobs this process saves to its own job processor at once (Agenda's notification
 * channel), without holding up the save: the request that enqueued one does not wait for it
 * to be locked.
 */
class LocalNotifications extends InMemoryNotificationChannel {
  override async publish(notification: JobNotification): Promise<void> {
    void super.publish(notification).catch(() => {});
  }
}

/**
 * When a repeating job polls for work: every `intervalMs` while its runs find work or work is
 * enqueued under its name in this process; otherwise after a pause that doubles from
 * `intervalMs` up to `maxMs`, so that an idle service rests. Runs find work elsewhere too: each
 * timer only has this process look for the job (`fill`), and the job runs wherever it is due.
 */
export class IdlePoll {
  private delay: number;
  private timer: NodeJS.Timeout | undefined;
  private dueAt = Infinity;
  private running = false;

  constructor(
    private readonly fill: () => void,
    readonly intervalMs: number,
    readonly maxMs: number,
  ) {
    this.delay = intervalMs;
  }

  /** The pause before the next look (tests). */
  get pauseMs(): number {
    return this.delay;
  }

  start(): void {
    this.running = true;
    this.delay = this.intervalMs;
    this.arm(this.intervalMs);
  }

  stop(): void {
    this.running = false;
    clearTimeout(this.timer);
    this.dueAt = Infinity;
  }

  /** Work was found or announced: look again within the interval (never later than planned). */
  busy(): void {
    this.delay = this.intervalMs;
    if (this.running && this.dueAt > Date.now() + this.intervalMs) this.arm(this.intervalMs);
  }

  private arm(ms: number): void {
    clearTimeout(this.timer);
    this.dueAt = Date.now() + ms;
    this.timer = setTimeout(() => {
      // Until a run says it found work, the next look is later.
      this.delay = Math.min(this.delay * 2, this.maxMs);
      this.arm(this.delay);
      this.fill();
    }, ms);
    this.timer.unref();
  }
}

/**
 * A service's Agenda instance, stored in its own database. One addition makes it safe with
 * several replicas on MongoDB and on the embedded FerretDB: a unique index on (name, data.key),
 * so enqueueing the same work twice keeps one job. Handlers still make their effect idempotent
 * (webhooks claims each attempt, analytics recomputes from its ledger), because a worker that
 * dies mid-run leaves its job locked until the lock lifetime passes, and then another runs it
 * again from the start.
 *
 * What it costs while idle: Agenda looks for due jobs of every name once per `scanEveryMs`
 * (one query a name), and locks those due before the next scan. Jobs this process saves start
 * at once (LocalNotifications) and a run that Agenda puts off to a time before the next scan (a
 * retry) is looked for at that time, so the scan only serves what other replicas scheduled and
 * locks that lapsed: it can be slow. Repeating jobs of short intervals poll on their own
 * (every(), IdlePoll), backing off while they find nothing.
 */
export class JobScheduler {
  readonly agenda: Agenda;
  private started = false;
  /** Handlers running in this process, awaited on stop. */
  private readonly running = new Set<Promise<void>>();
  private readonly channel = new LocalNotifications();
  private readonly polls = new Map<string, IdlePoll>();
  /** Looks for jobs put off to a time before the next scan (retries), by name: the earliest. */
  private readonly later = new Map<string, { timer: NodeJS.Timeout; at: number }>();

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly scanEveryMs: number,
    service: string,
  ) {
    this.agenda = new Agenda({
      backend: new MongoBackend({ mongo: db, collection: JOBS_COLLECTION }),
      name: `${service}-${os.hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`,
      processEvery: scanEveryMs,
      notificationChannel: this.channel,
      removeOnComplete: true,
      defaultConcurrency: 10,
      maxConcurrency: 50,
    });
    this.agenda.on("error", (err) => this.logger.warn({ err }, "job scheduler error"));
    this.agenda.on("complete", (job: Job) => this.afterRun(job));
    trackJobQueue(service, collectionBacklog(db.collection(JOBS_COLLECTION), "nextRunAt", () => ({ nextRunAt: { $lte: new Date() }, lockedAt: null })));
  }

  async init(): Promise<void> {
    await this.db.collection(JOBS_COLLECTION).createIndex({ name: 1, "data.key": 1 }, { unique: true, name: "unique_job_key" });
  }

  /**
   * A handler of a job polled by every() resolves true when its run found work: the next run
   * then comes within the interval instead of after a longer pause.
   */
  define<T extends KeyedPayload>(
    name: string,
    handler: (job: Job<T>) => Promise<void | boolean>,
    opts: Parameters<Agenda["define"]>[2] = {},
  ): void {
    seriesAtZero(jobFailures, { task: name });
    this.agenda.define<T>(
      name,
      async (job) => {
        const run = handler(job).then((found) => {
          if (found === true) this.polls.get(name)?.busy();
        });
        this.running.add(run);
        try {
          await run;
        } catch (err) {
          this.logger.warn({ err, job: name, key: job.attrs.data.key }, "job failed");
          jobFailures.inc({ task: name });
          throw err;
        } finally {
          this.running.delete(run);
        }
      },
      opts,
    );
  }

  /**
   * A job whose runs this process also starts itself when it has work for it (kick()), with
   * nothing saved to the database: a kick through Agenda was a job saved, locked, renewed and
   * deleted per request that wrote work (8 of the commands of a batch of 1,000 usage events).
   * The job's repeating run (every()) stays with Agenda and
   * finds what a process that died left. Runs of the name in this process, started by Agenda or
   * by a kick, go one at a time (RunLine), so the handler may assume no other run of its own
   * process beside it (runs of other replicas may be). The handler gets `renew`, which extends an
   * Agenda run's lock at most every quarter of its lifetime, and does nothing in a kicked run
   * (which holds no lock).
   */
  defineKicked(name: string, handler: (renew: () => Promise<void>) => Promise<void | boolean>, lockLifetime: number): void {
    const line = new RunLine();
    this.kicked.set(name, { line, run: () => handler(async () => {}) });
    // One Agenda run at a time as well: a second one locked here would only wait in the line, holding its lock.
    this.define(name, (job) => line.run(() => handler(renewer(job, lockLifetime / 4))), { lockLifetime, concurrency: 1 });
  }
  private readonly kicked = new Map<string, { line: RunLine; run: () => Promise<void | boolean> }>();
  /** Kicks put off by kickSoon(), by job name. */
  private readonly soon = new Map<string, NodeJS.Timeout>();

  /**
   * kick() in `afterMs`; kicks meanwhile share it. For work that may wait a moment and costs
   * less done together, and whose kick comes while the process is busy with what announced it.
   */
  kickSoon(name: string, afterMs: number): void {
    if (!this.started || this.soon.has(name)) return;
    const timer = setTimeout(() => {
      this.soon.delete(name);
      this.kick(name);
    }, afterMs);
    // Nothing is lost if the process ends first: the job's repeating run finds the work.
    timer.unref();
    this.soon.set(name, timer);
  }

  /**
   * Runs a job defined with defineKicked in this process now, or once more after the run in
   * progress (work written meanwhile); kicks before that run starts share it. Also brings the
   * job's poll back to its interval. Errors are logged: the repeating run retries the work.
   */
  kick(name: string): void {
    const k = this.kicked.get(name);
    if (!k || !this.started) return;
    this.polls.get(name)?.busy();
    const run = k.line.kick(k.run).then(
      (found) => {
        if (found === true) this.polls.get(name)?.busy();
      },
      (err: unknown) => {
        this.logger.warn({ err, job: name }, "job failed");
        jobFailures.inc({ task: name });
      },
    );
    this.running.add(run);
    void run.finally(() => this.running.delete(run));
  }

  /**
   * Schedules the job at `at` unless a job with the same name and key exists. Work announced
   * under a polled name (every()) also brings its next poll within the interval: the work
   * may be left to it (a job pending or running absorbs this one).
   */
  async enqueue<T extends KeyedPayload>(name: string, data: T, at: Date): Promise<void> {
    this.polls.get(name)?.busy();
    try {
      await this.agenda.create(name, data).schedule(at).unique({ "data.key": data.key }, { insertOnly: true }).save();
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
  }

  /**
   * A repeating job (one per name across replicas), on a UTC cron or every `interval` ms.
   * An interval shorter than the scan is kept by this process polling for the job (IdlePoll):
   * every `interval` while runs here find work (the handler resolves true) or work is enqueued
   * under the name here, else after a pause doubling up to `idleMaxMs` (default: `interval`,
   * a fixed pace). Call it once the scheduler has started.
   */
  async every<T extends KeyedPayload>(name: string, interval: string | number, data: T, idleMaxMs?: number): Promise<void> {
    try {
      await this.agenda.every(interval, name, data, { timezone: "UTC", skipImmediate: true });
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
    if (typeof interval === "number" && interval < this.scanEveryMs && this.started && !this.polls.has(name)) {
      const poll = new IdlePoll(() => this.fill(name), interval, Math.max(interval, idleMaxMs ?? interval));
      this.polls.set(name, poll);
      poll.start();
    }
  }

  /** Has this process look for due jobs of `name` now, rather than at its next scan. */
  private fill(name: string): void {
    if (!this.started) return;
    const notification: JobNotification = { jobId: name as unknown as JobId, jobName: name, nextRunAt: null, priority: 0, timestamp: new Date() };
    void this.channel.publish(notification);
  }

  /**
   * A run that Agenda put off to a time before the next scan (a retry, or the next run of a
   * repeating job that does not poll) is looked for at that time.
   */
  private afterRun(job: Job): void {
    const name = job.attrs.name;
    const next = job.attrs.nextRunAt?.getTime();
    if (!this.started || next === undefined || this.polls.has(name)) return;
    if (next - Date.now() >= this.scanEveryMs || (this.later.get(name)?.at ?? Infinity) <= next) return;
    clearTimeout(this.later.get(name)?.timer);
    const timer = setTimeout(() => {
      this.later.delete(name);
      this.fill(name);
    }, Math.max(0, next - Date.now()));
    timer.unref();
    this.later.set(name, { timer, at: next });
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
    for (const poll of this.polls.values()) poll.stop();
    this.polls.clear();
    for (const { timer } of this.later.values()) clearTimeout(timer);
    this.later.clear();
    for (const timer of this.soon.values()) clearTimeout(timer);
    this.soon.clear();
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

/**
 * Runs of one job in this process, one at a time. A kick while a run is in progress has one more
 * follow it (for work written after that run looked); kicks made before that one starts share it.
 */
export class RunLine {
  private tail: Promise<unknown> = Promise.resolve();
  private next: Promise<void | boolean> | null = null;

  run<R>(work: () => Promise<R>): Promise<R> {
    const p = this.tail.then(work);
    this.tail = p.catch(() => {});
    return p;
  }

  kick(work: () => Promise<void | boolean>): Promise<void | boolean> {
    if (this.next) return this.next;
    const p = this.run(() => {
      this.next = null;
      return work();
    });
    this.next = p;
    return p;
  }
}

/** Extends an Agenda run's lock, at most once per `everyMs`: each renewal is a write. */
function renewer(job: Job, everyMs: number): () => Promise<void> {
  let last = Date.now();
  return async () => {
    if (Date.now() - last < everyMs) return;
    last = Date.now();
    await job.touch();
  };
}
