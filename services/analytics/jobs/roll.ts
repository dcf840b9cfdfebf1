import type { KeyedPayload } from "@meter/lib/jobs";
import type { AnalyticsDeps } from "../deps.ts";

export const ROLL = "analytics.roll";

/** Days recomputed per run; more wait for the next run. */
const PASS_MAX = 200;

/**
 * Brings dirty days' rollups up to date (Roller.rollPending, paced). Two jobs of this name
 * exist at most, told apart by their key: "every", repeating every ROLL_INTERVAL_MS (one across
 * replicas) while runs find dirty days, else after a pause growing up to IDLE_POLL_MAX_MS
 * (JobScheduler.every); RecordEvents kicks a run in its own process (JobScheduler.kick: nothing
 * saved; one more after the run in progress, for facts stored after it looked).
 *
 * Lock lifetime: `rollLeaseMs` (60 s), renewed while days are recomputed, so only a
 * silent worker loses it. A worker that dies mid-run leaves the job locked and the day it was
 * on leased (same lifetime) and still marked dirty: once the lock has expired another replica
 * runs the job again and recomputes the day from the ledger, which gives the same rollup
 * whatever the dead worker had written. Nothing is counted twice or lost.
 */
export function defineRoll(deps: AnalyticsDeps, lockMs: number): void {
  deps.scheduler.defineKicked(
    ROLL,
    async (renew) => {
      // Days held back by pacing or beyond PASS_MAX stay marked: the next run takes them.
      // A failure is logged, not thrown: the day stays marked and the next run retries it.
      const rolled = await deps.roller.rollPending(PASS_MAX, true, renew).catch((err) => {
        deps.logger.error({ err }, "rolling up failed; will retry");
        return 1;
      });
      // Days left dirty (paced, held by another roller, past PASS_MAX) keep the pace too.
      return rolled > 0 || deps.roller.daysLeft;
    },
    lockMs,
  );
}

/** Runs the roll job in this process now, or once more after the run in progress. */
export function kickRoll(deps: AnalyticsDeps): void {
  deps.scheduler.kick(ROLL);
}

/** The repeating run, every `intervalMs` while it finds work, else at most `idleMaxMs` apart (one job across replicas). */
export function scheduleRoll(deps: AnalyticsDeps, intervalMs: number, idleMaxMs: number): Promise<void> {
  return deps.scheduler.every<KeyedPayload>(ROLL, intervalMs, { key: "every" }, idleMaxMs);
}
