import type { Job } from "agenda";
import type { KeyedPayload } from "@meter/lib/jobs";
import type { AnalyticsDeps } from "../deps.ts";

export const ROLL = "analytics.roll";

/** Days recomputed per run; more wait for the next run. */
const PASS_MAX = 200;

/**
 * Brings dirty days' rollups up to date (Roller.rollPending, paced). Two jobs of this name
 * exist at most, told apart by their key: "every", repeating every ROLL_INTERVAL_MS (one across
 * replicas) while runs find dirty days, else after a pause growing up to IDLE_POLL_MAX_MS
 * (JobScheduler.every), and "kick", enqueued by RecordEvents to run now (unique: a kick pending
 * or running absorbs the next ones; facts stored meanwhile are left to the next run of either,
 * which the kick brings within the interval).
 *
 * Lock lifetime: `rollLeaseMs` (60 s), renewed after every day recomputed (`touch`), so only a
 * silent worker loses it. A worker that dies mid-run leaves the job locked and the day it was
 * on leased (same lifetime) and still marked dirty: once the lock has expired another replica
 * runs the job again and recomputes the day from the ledger, which gives the same rollup
 * whatever the dead worker had written. Nothing is counted twice or lost.
 */
export function defineRoll(deps: AnalyticsDeps, lockMs: number): void {
  deps.scheduler.define<KeyedPayload>(
    ROLL,
    async (job: Job<KeyedPayload>) => {
      // Days held back by pacing or beyond PASS_MAX stay marked: the next run takes them.
      // A failure is logged, not thrown: the day stays marked and the next run retries it,
      // whereas a failed kick would be kept by Agenda and absorb every later kick.
      const rolled = await deps.roller.rollPending(PASS_MAX, true, () => job.touch()).catch((err) => {
        deps.logger.error({ err }, "rolling up failed; will retry");
        return 1;
      });
      // Days left dirty (paced, held by another roller, past PASS_MAX) keep the pace too.
      return rolled > 0 || deps.roller.daysLeft;
    },
    { lockLifetime: lockMs, concurrency: 1 },
  );
}

/** Runs the roll job at `at` (now by default) unless a kick is already pending or running. */
export function enqueueRoll(deps: AnalyticsDeps, at = new Date()): Promise<void> {
  return deps.scheduler.enqueue<KeyedPayload>(ROLL, { key: "kick" }, at);
}

/** The repeating run, every `intervalMs` while it finds work, else at most `idleMaxMs` apart (one job across replicas). */
export function scheduleRoll(deps: AnalyticsDeps, intervalMs: number, idleMaxMs: number): Promise<void> {
  return deps.scheduler.every<KeyedPayload>(ROLL, intervalMs, { key: "every" }, idleMaxMs);
}
