import { rpcError } from "@meter/lib/errors";
import type { Logger } from "@meter/lib/logger";
import type { GateEventDoc, GateEventStore } from "../store/gate-events.ts";
import type { UsageEventDoc, UsageEventStore } from "../store/usage-events.ts";
import type { JobDoc, JobStore } from "../store/jobs.ts";
import { completeGates, completeUsage, type CompletionDeps } from "./complete.ts";

/**
 * The exactly-once protocol of a write: the job written first and closed last, claimed by one
 * claimant who completes it, waited for by the others, and earlier jobs a request meets adopted
 * (taken over) so that a retry after a crash answers with exact totals. The recovery sweep
 * (recovery.ts) takes over by age what no request adopts.
 */

/** What claiming, waiting for and taking over jobs needs: the job store, the jobs being completed here, and the recovery age. */
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

/** What the write path needs: what recovery and completion need, the inserts, and a kick for the relay. */
export interface WriteDeps extends RecoveryDeps, CompletionDeps {
  events: CompletionDeps["events"] & Pick<UsageEventStore, "insertNew">;
  gates: CompletionDeps["gates"] & Pick<GateEventStore, "insertNew">;
  jobs: RecoveryDeps["jobs"] & CompletionDeps["jobs"] & Pick<JobStore, "open">;
  /** Runs a relay round now, unless one is pending (the job jobs/relay.ts). */
  kickRelay: () => void;
}

/**
 * The write path of a request. The job is written first and closed last; the documents
 * carry its id, so whoever completes the job (this request, a retry or the sweep) derives
 * work from exactly the documents this job inserted. Once its insert returned, the request
 * claims its job; if a retry claimed it first, the request waits for that retry to close it.
 * `complete` is the completion of the job's kind, for this job and the earlier ones it adopts.
 */
async function storeJob<D extends { _id: string }>(
  deps: WriteDeps,
  job: JobDoc,
  docs: D[],
  insert: (docs: D[]) => Promise<Set<string>>,
  complete: Completer<D>,
  stages?: JobStages<D>,
): Promise<Set<string>> {
  await deps.jobs.open(job);
  const inserted = await insert(docs);
  stages?.inserted?.(docs.filter((d) => inserted.has(d._id)));
  const claimed = await deps.jobs.claim(job, deps.now(), new Date(0));
  if (claimed) {
    await completeClaimed(deps, claimed, complete, docs.filter((d) => inserted.has(d._id)));
    stages?.ownDone?.();
  } else {
    stages?.ownDone?.();
    await awaitClosed(deps, job._id);
  }
  const offered = new Set(docs.map((d) => d._id));
  await adoptOverlapping(deps, job, complete, offered, docs.filter((d) => !inserted.has(d._id)).map((d) => d._id));
  // New outbox entries: hand them over now rather than at the next repeating round. Best
  // effort: the events are stored and counted, so a failure here must not answer 5xx for them
  // (a manual event sent again without an idempotency key would count twice); the round runs anyway.
  if (inserted.size > 0) deps.kickRelay();
  return inserted;
}

/**
 * Where a request's own job stands, for whoever waits on it (the counters' rounds:
 * CounterStore.expect): `inserted` once its documents are stored (those it inserted now),
 * `ownDone` once its own completion is over or left to another claimant. Either may come
 * more than once.
 */
export interface JobStages<D> {
  inserted?(docs: readonly D[]): void;
  ownDone?(): void;
}

/** Stores usage events exactly once and counts them exactly once (the counters' job guard). */
export function storeUsage(deps: WriteDeps, job: JobDoc, docs: UsageEventDoc[], stages?: JobStages<UsageEventDoc>): Promise<Set<string>> {
  requireFiniteFigures(docs);
  return storeJob(deps, job, docs, (d) => deps.events.insertNew(d), (j, inserted) => completeUsage(deps, j, inserted), stages);
}

/**
 * Every figure of an event that is counted or handed on must be a finite number >= 0: one
 * NaN would poison a counter for good and fail every handover of its outbox entry. Inputs
 * are checked field by field before; this catches what arithmetic made of them (a price
 * times a token count that overflows, a sum of two huge costs).
 */
export function requireFiniteFigures(docs: readonly UsageEventDoc[]): void {
  for (const d of docs) {
    const figures = { input_tokens: d.input_tokens, output_tokens: d.output_tokens, total_tokens: d.total_tokens, cost_tokens: d.cost_tokens, cost_tools: d.cost_tools, cost_total: d.cost_total };
    for (const [field, v] of Object.entries(figures)) {
      if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
        throw rpcError.invalid(`event ${d.event_id}: ${field} comes to ${String(v)}, not a finite number >= 0; check its figures and the plan's prices`);
      }
    }
  }
}

/** Stores gate events exactly once and queues each new one for webhooks and analytics. */
export function storeGates(deps: WriteDeps, job: JobDoc, docs: GateEventDoc[]): Promise<Set<string>> {
  return storeJob(deps, job, docs, (d) => deps.gates.insertNew(d), (j, inserted) => completeGates(deps, j, inserted));
}

/**
 * Completes a claimed job; on failure gives the claim up (store/jobs.ts `unclaim`) so the
 * next retry covering it completes it at once, then rethrows.
 */
async function completeClaimed<D>(deps: RecoveryDeps, job: JobDoc, complete: Completer<D>, inserted?: D[]): Promise<void> {
  try {
    await complete(job, inserted);
  } catch (err) {
    await deps.jobs.unclaim(job).catch(() => {});
    throw err;
  }
}

/** Completes a job claimed from another request (crashed or slow); shared within the process. */
export function completeTaken(deps: RecoveryDeps, job: JobDoc, complete: Completer<never>): Promise<void> {
  let running = deps.recovering.get(job._id);
  if (!running) {
    running = completeClaimed(deps, job, complete).finally(() => deps.recovering.delete(job._id));
    deps.recovering.set(job._id, running);
  }
  return running;
}

/** Claims a job held by nobody, or by a claimant silent for the recovery age. */
export function claimTaken(deps: RecoveryDeps, job: JobDoc): Promise<JobDoc | null> {
  const now = deps.now();
  return deps.jobs.claim(job, now, new Date(now.getTime() - deps.recoveryAfterMs));
}

/**
 * Waits (by primary-key reads) until another claimant closes the job, at most the recovery
 * age; still open then, UNAVAILABLE: the job's events are stored but maybe not counted yet,
 * and answering them as accepted or duplicates would hide that from a client that can retry.
 */
async function awaitClosed(deps: RecoveryDeps, id: string): Promise<void> {
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
 * - any other overlapping job once it is takeable by age (see isTakeable).
 * They are of the request's own kind, so `complete` (the request's own completion) completes them.
 */
async function adoptOverlapping(deps: RecoveryDeps, own: JobDoc, complete: Completer<never>, offered: Set<string>, duplicateIds: string[]): Promise<void> {
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
export function isTakeable(deps: RecoveryDeps, job: JobDoc, now: number): boolean {
  return job.claimed_at
    ? job.claimed_at.getTime() < now - deps.recoveryAfterMs
    : job.created_at.getTime() < now - 10 * deps.recoveryAfterMs;
}
