import { rpcError } from "@meter/lib/errors";
import type { Logger } from "@meter/lib/logger";
import { quarantinedJobs } from "@meter/lib/metrics";
import { completeGates, completeUsage, type CompletionDeps } from "./complete.ts";
import type { JobDoc, JobStore } from "../store/jobs.ts";

/** What recovery needs: the job store, the jobs being completed here, and the recovery age. */
export interface RecoveryDeps {
  jobs: Pick<JobStore, "claim" | "unclaim" | "failed" | "isOpen" | "ofProduct" | "olderThan">;
  /** Jobs this process is completing right now (so the sweep and a retry share the work). */
  recovering: Map<string, Promise<void>>;
  /** Age after which an unfinished job is taken over. */
  recoveryAfterMs: number;
  logger: Logger;
  now(): Date;
}

/**
 * The completion of one kind of job (complete.ts), chosen where the job is written: it derives
 * what the job's inserted documents imply and closes the job. `inserted` when the caller knows
 * them (its own insert); else they are read by the job's id.
 */
export type Completer<D> = (job: JobDoc, inserted?: D[]) => Promise<void>;

/** Failed completions by the sweep after which a job is quarantined (store/jobs.ts). */
export const MAX_RECOVERY_FAILURES = 5;

/** Jobs one sweep round looks at, oldest first. */
const SWEEP_JOBS = 100;

/**
 * Completes a claimed job; on failure gives the claim up (store/jobs.ts `unclaim`) so the
 * next retry covering it completes it at once, then rethrows.
 */
export async function completeClaimed<D>(deps: RecoveryDeps, job: JobDoc, complete: Completer<D>, inserted?: D[]): Promise<void> {
  try {
    await complete(job, inserted);
  } catch (err) {
    await deps.jobs.unclaim(job).catch(() => {});
    throw err;
  }
}

/** Completes a job claimed from another request (crashed or slow); shared within the process. */
function completeTaken(deps: RecoveryDeps, job: JobDoc, complete: Completer<unknown>): Promise<void> {
  let running = deps.recovering.get(job._id);
  if (!running) {
    running = completeClaimed(deps, job, complete).finally(() => deps.recovering.delete(job._id));
    deps.recovering.set(job._id, running);
  }
  return running;
}

/** Claims a job held by nobody, or by a claimant silent for the recovery age. */
function claimTaken(deps: RecoveryDeps, job: JobDoc): Promise<JobDoc | null> {
  const now = deps.now();
  return deps.jobs.claim(job, now, new Date(now.getTime() - deps.recoveryAfterMs));
}

/**
 * Waits (by primary-key reads) until another claimant closes the job, at most the recovery
 * age; still open then, UNAVAILABLE: the job's events are stored but maybe not counted yet,
 * and answering them as accepted or duplicates would hide that from a client that can retry.
 */
export async function awaitClosed(deps: RecoveryDeps, id: string): Promise<void> {
  const until = Date.now() + deps.recoveryAfterMs;
  for (let pause = 5; Date.now() < until; pause = Math.min(200, pause * 2)) {
    if (!(await deps.jobs.isOpen(id))) return;
    await new Promise((r) => setTimeout(r, pause));
  }
  if (await deps.jobs.isOpen(id)) {
    throw rpcError.unavailable("events of this batch are stored but their counting has not finished; send the batch again");
  }
}

/**
 * Offered events that were already stored belong to earlier jobs, which this request
 * completes now if their request may be gone, so that a client retrying after a crash sees
 * exact totals when the retry returns:
 * - a job whose offered ids are all in this request: this request's insert has returned,
 *   so every one of them is stored and the job can insert nothing more; its set of events
 *   is final and it may be completed at once (unless its own request holds the claim:
 *   then this request waits until it closes it);
 * - any other overlapping job once it is takeable by age (see takeable).
 * They are of the request's own kind, so `complete` (the request's own completion) completes them.
 */
export async function adoptOverlapping(deps: RecoveryDeps, own: JobDoc, complete: Completer<unknown>, offered: Set<string>, duplicateIds: string[]): Promise<void> {
  if (duplicateIds.length === 0) return;
  const wanted = new Set(duplicateIds);
  const now = deps.now().getTime();
  const jobs = await deps.jobs.ofProduct(own.product_id, own.kind);
  for (const job of jobs) {
    if (job._id === own._id || !job.ids.some((id) => wanted.has(id))) continue;
    const covered = job.ids.every((id) => offered.has(id));
    if (!covered && !isTakeable(deps, job, now)) continue;
    const claimed = await claimTaken(deps, job);
    if (claimed) await completeTaken(deps, claimed, complete);
    else if (covered) await awaitClosed(deps, job._id);
  }
}

/**
 * Jobs another request may complete without covering them. A claimed job (its insert had
 * returned) is taken once its claim is older than the recovery age. An unclaimed one may
 * still have its insert running in the database (a request cut off mid-insert leaves the
 * server finishing it), and completing it early would fix its set of events too soon; it is
 * taken only after ten times the recovery age.
 */
function isTakeable(deps: RecoveryDeps, job: JobDoc, now: number): boolean {
  return job.claimed_at
    ? job.claimed_at.getTime() < now - deps.recoveryAfterMs
    : job.created_at.getTime() < now - 10 * deps.recoveryAfterMs;
}

/**
 * The recovery sweep of the background loop: oldest job first; a job that fails is passed
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
