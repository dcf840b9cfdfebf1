import { rpcError } from "@meter/lib/errors";
import type { GateEventDoc, GateEventStore } from "../store/gate-events.ts";
import type { UsageEventDoc, UsageEventStore } from "../store/usage-events.ts";
import type { JobDoc, JobStore } from "../store/jobs.ts";
import { completeGates, completeUsage, type CompletionDeps } from "./complete.ts";
import { adoptOverlapping, awaitClosed, completeClaimed, type Completer, type RecoveryDeps } from "./recovery.ts";

/** What the write path needs: what recovery and completion need, the inserts, and a kick for the relay. */
export interface WriteDeps extends RecoveryDeps, CompletionDeps {
  events: CompletionDeps["events"] & Pick<UsageEventStore, "insertNew">;
  gates: CompletionDeps["gates"] & Pick<GateEventStore, "insertNew">;
  jobs: RecoveryDeps["jobs"] & CompletionDeps["jobs"] & Pick<JobStore, "open">;
  /** Runs a relay round now, unless one is pending (the job jobs/relay.ts). */
  kickRelay: () => Promise<void>;
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
): Promise<Set<string>> {
  await deps.jobs.open(job);
  const inserted = await insert(docs);
  const claimed = await deps.jobs.claim(job, deps.now(), new Date(0));
  if (claimed) await completeClaimed(deps, claimed, complete, docs.filter((d) => inserted.has(d._id)));
  else await awaitClosed(deps, job._id);
  const offered = new Set(docs.map((d) => d._id));
  await adoptOverlapping(deps, job, complete as Completer<unknown>, offered, docs.filter((d) => !inserted.has(d._id)).map((d) => d._id));
  // New outbox entries: hand them over now rather than at the next repeating round.
  if (inserted.size > 0) await deps.kickRelay();
  return inserted;
}

/** Stores usage events exactly once and counts them exactly once (the counters' job guard). */
export function storeUsage(deps: WriteDeps, job: JobDoc, docs: UsageEventDoc[]): Promise<Set<string>> {
  requireFiniteFigures(docs);
  return storeJob(deps, job, docs, (d) => deps.events.insertNew(d), (j, inserted) => completeUsage(deps, j, inserted));
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
