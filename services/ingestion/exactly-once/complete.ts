import { hasThresholds } from "@meter/rules";
import { arrivalList, MAX_LISTED, teamListKey, type ArrivalStore } from "../late-changes/arrivals.ts";
import type { LeaseStore } from "../leases/store.ts";
import type { CounterStore } from "../store/counters.ts";
import type { WindowStore } from "../windows/store.ts";
import { windowDeltas } from "../windows/shares.ts";
import { windowSettlement } from "../windows/slices.ts";
import { deltas, groupBy } from "../domain/period-deltas.ts";
import { namedLeases, spendsByLease } from "../domain/lease-settlement.ts";
import { crossingsClosedBefore } from "../domain/retention-policy.ts";
import type { GateEventDoc, GateEventStore } from "../store/gate-events.ts";
import { entry, type OutboxStore } from "../store/outbox.ts";
import type { UsageEventDoc, UsageEventStore } from "../store/usage-events.ts";
import { recordCrossings, type CrossingDeps } from "../thresholds/crossings.ts";
import type { JobDoc, JobStore } from "../store/jobs.ts";
import type { CreditStore } from "../credits/store.ts";
import { creditedNano, creditPeriods, settlePeriods } from "../credits/settle.ts";
import { countTeams, releaseTeams, type TeamCountDeps, type TeamCounted } from "../teams/count.ts";

/** What completing a usage job needs: the stores it reads and writes, and what recording crossings needs. */
export interface UsageCompletionDeps extends CrossingDeps, TeamCountDeps {
  events: Pick<UsageEventStore, "ofJob">;
  /** How long a claimant may be silent before its job is taken over (write.ts). */
  recoveryAfterMs: number;
  jobs: Pick<JobStore, "close">;
  counters: Pick<CounterStore, "add" | "released" | "spends">;
  credits: CreditStore;
  windows: Pick<WindowStore, "add" | "released" | "leasesOf">;
  arrivals: Pick<ArrivalStore, "record">;
  outbox: Pick<OutboxStore, "put" | "analytics" | "webhooks">;
  leases: { store: Pick<LeaseStore, "entries">; teams: Pick<LeaseStore, "entries">; graceMs: number };
}

/** What completing a gate-event job needs. */
export interface GateCompletionDeps {
  gates: Pick<GateEventStore, "ofJob" | "file">;
  jobs: Pick<JobStore, "close">;
  outbox: Pick<OutboxStore, "put" | "analytics" | "webhooks">;
}

/** What completing a job of either kind needs (the recovery sweep finds both). */
export type CompletionDeps = UsageCompletionDeps & GateCompletionDeps;

/**
 * Completes a claimed usage job; `inserted` when the caller knows them (its own insert), else
 * read by the job's id. Everything derived from the events is written first (derive), then the
 * job is closed, and only then may the counters' and windows' guard entries of the job go.
 */
export async function completeUsage(deps: UsageCompletionDeps, job: JobDoc, inserted?: UsageEventDoc[]): Promise<void> {
  const { counters, windows, teams } = await derive(deps, job, inserted ?? (await deps.events.ofJob(job)));
  await deps.jobs.close(job._id);
  const release = () => {
    deps.counters.released(job._id, counters);
    deps.windows.released(job._id, windows);
    releaseTeams(deps, job._id, teams);
  };
  // Taken over from a claimant gone silent, which may still be writing (a paused process, a write
  // queued behind an outage): its addition must find the guards, so they stay a while.
  if (job.taken_from) setTimeout(release, takenOverGuardMs(deps.recoveryAfterMs)).unref();
  else release();
}

/** How long a taken-over job's guard entries outlive its close: ten recovery ages, at least a minute. */
export const takenOverGuardMs = (recoveryAfterMs: number) => Math.max(60_000, 10 * recoveryAfterMs);

/**
 * Everything derived from the usage events a job inserted: the analytics outbox entry, the
 * counters (once, guarded by the job id), then thresholds from the limited period counters
 * as that same update left them. Each step is idempotent, so a completion cut off anywhere can
 * be repeated by whoever claims the job next.
 */
async function derive(deps: UsageCompletionDeps, job: JobDoc, inserted: UsageEventDoc[]): Promise<{ counters: string[]; windows: string[]; teams: TeamCounted }> {
  await deps.outbox.put(deps.outbox.analytics, [entry("usage", job._id, inserted.map(usageFact))]);
  const { periods, months } = deltas(inserted);
  for (const p of periods) {
    const credited = creditedNano(p.events);
    if (credited !== 0) p.delta.credited = credited;
  }
  // Before the counters: an event counted in a period (a user's, or a team's) is always findable by
  // a late change. A team's list holds the job's events of all its members, so the backfill bound
  // (MAX_LISTED) is a user's alone.
  const listed = periods.filter((p) => p.events.length <= MAX_LISTED).map((p) => arrivalList(p.delta.id, p.events));
  for (const [id, events] of groupBy(inserted.filter((e) => e.team), (e) => e.team!.counter_id)) listed.push(arrivalList(teamListKey(id), events));
  await deps.arrivals.record(job.product_id, job._id, listed, deps.now());
  // What each period's events spent from the leases its counter holds: settled in the counter's own update.
  await Promise.all(
    periods.map(async (p) => {
      const named = namedLeases(p.events);
      const held = named.length === 0 ? {} : await deps.leases.store.entries(p.delta.id, named);
      Object.assign(p.delta, spendsByLease(p.events, held, deps.now().getTime(), deps.leases.graceMs));
    }),
  );
  const limited = periods.filter((p) => hasThresholds(p.limit.spend_limit));
  // The members' teams (teams/count.ts), beside the members' own counters, under the same job guard.
  const [after, teams] = await Promise.all([
    deps.counters.add(job._id, [...periods.map((p) => p.delta), ...months], new Set(limited.map((p) => p.delta.id))),
    countTeams(deps, job._id, inserted),
  ]);
  // The windows of the plans' limits, under the same job guard (windows/store.ts).
  const windows = windowDeltas(inserted, deps.now());
  await Promise.all([
    // Credits drawn from the counters as this job left them (credits/settle.ts): once, however often this runs.
    settlePeriods({ spends: (ids) => deps.counters.spends(ids), teamSpends: (ids) => deps.teamCounters.spends(ids), closedBefore: crossingsClosedBefore(deps.now(), deps.retention), accounts: deps }, creditPeriods(periods)),
    (async () => {
      // What the events spent from budget leases' window slices: settled in the window's own update.
      await Promise.all(
        windows.map(async (w) => {
          const named = w.byLease === undefined ? [] : [...w.byLease.keys()];
          const leases = named.length === 0 ? {} : await deps.windows.leasesOf(w.id, named);
          w.settle = windowSettlement(w, leases, deps.now().getTime(), deps.leases.graceMs);
        }),
      );
      await deps.windows.add(job._id, windows, deps.now());
    })(),
  ]);
  await Promise.all(
    limited.map(async (p) => {
      const counter = after.get(p.delta.id);
      if (counter) await recordCrossings(deps, counter, p.delta, p.limit);
    }),
  );
  return { counters: [...periods.map((p) => p.delta.id), ...months.map((m) => m.id)], windows: windows.map((w) => w.id), teams };
}

/**
 * Completes a claimed gate-event job (`inserted` as for completeUsage): its analytics and
 * webhook outbox entries and the listing's hour buckets, each idempotent, then the close.
 */
export async function completeGates(deps: GateCompletionDeps, job: JobDoc, inserted?: GateEventDoc[]): Promise<void> {
  const docs = inserted ?? (await deps.gates.ofJob(job));
  await deps.outbox.put(deps.outbox.analytics, [entry("gate", job._id, docs.map(gateFact))]);
  await deps.outbox.put(deps.outbox.webhooks, [entry("gate", job._id, docs.map(({ job: _, ...d }) => d))]);
  await deps.gates.file(docs);
  await deps.jobs.close(job._id);
}

/** What analytics needs of a usage event (the outbox keeps only this). */
function usageFact(d: UsageEventDoc) {
  const { product_id, event_id, user_id, timestamp, model, total_tokens, cost_total, source, tool_call_count, team_id } = d;
  return { product_id, event_id, user_id, timestamp, model, total_tokens, cost_total, source, tool_call_count, ...(team_id !== undefined && { team_id }) };
}

function gateFact(d: GateEventDoc) {
  const { product_id, event_id, user_id, timestamp, status, blocked, team_id } = d;
  return { product_id, event_id, user_id, timestamp, status, blocked, ...(team_id !== undefined && { team_id }) };
}
