import { quarantinedJobs } from "@meter/lib/metrics";
import { completeGates, completeUsage, type CompletionDeps } from "./complete.ts";
import { claimTaken, completeTaken, isTakeable, type RecoveryDeps } from "./write.ts";
import type { JobDoc } from "../store/jobs.ts";

/** Failed completions by the sweep after which a job is quarantined (store/jobs.ts). */
export const MAX_RECOVERY_FAILURES = 5;

/** Jobs one sweep round looks at, oldest first. */
const SWEEP_JOBS = 100;

/**
 * The recovery sweep of the background loop: jobs no request adopted, taken over by age as a
 * request adopts one (write.ts); oldest job first; a job that fails is passed
 * by (counted against it, tried again after the recovery age, quarantined at
 * MAX_RECOVERY_FAILURES), so one job that cannot be completed never holds up the interrupted
 * batches of other products behind it. It finds jobs of every kind: the one place a job's
 * completion is chosen by its kind.
 */
export async function recoverStale(deps: RecoveryDeps & CompletionDeps): Promise<number> {
  const complete = (job: JobDoc) => (job.kind === "usage" ? completeUsage(deps, job) : completeGates(deps, job));
  const now = deps.now().getTime();
  const old = await deps.jobs.olderThan(new Date(now - deps.recoveryAfterMs), SWEEP_JOBS);
  let done = 0;
  for (const job of old.filter((j) => isTakeable(deps, j, now))) {
    const claimed = await claimTaken(deps, job);
    if (!claimed) continue;
    try {
      await completeTaken(deps, claimed, complete);
      done++;
    } catch (err) {
      await recordFailure(deps, job, err).catch((e: unknown) => deps.logger.warn({ err: e, job: job._id }, "recording a failed completion failed"));
    }
  }
  if (done > 0) deps.logger.warn({ jobs: done }, "completed jobs left unfinished by interrupted requests");
  return done;
}

async function recordFailure(deps: RecoveryDeps, job: JobDoc, err: unknown): Promise<void> {
  // Claimed again (its claim was given back): the sweep tries it next after the recovery age,
  // so a passing fault (a database restarting) never quarantines a job within seconds.
  await deps.jobs.claim(job, deps.now(), new Date(1));
  const quarantined = await deps.jobs.failed(job._id, MAX_RECOVERY_FAILURES, deps.now());
  if (quarantined) {
    quarantinedJobs.inc({ kind: job.kind });
    deps.logger.error(
      { err, job: job._id, productId: job.product_id, kind: job.kind, events: job.ids.length },
      `quarantined an unfinished job after ${MAX_RECOVERY_FAILURES} failed completions; the recovery sweep passes it by (a retry of its batch still tries it)`,
    );
  } else {
    deps.logger.warn({ err, job: job._id, productId: job.product_id }, "completing an unfinished job failed; the sweep tries it again");
  }
}
