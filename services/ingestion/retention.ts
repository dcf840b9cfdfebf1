import { DAY_MS } from "@meter/lib/time";
import type { JobScheduler } from "@meter/lib/jobs";
import { crossingsClosedBefore, type RetentionPolicy } from "./domain/retention-policy.ts";
import type { JobStore } from "./store/jobs.ts";
import type { ArrivalStore } from "./late-changes/arrivals.ts";
import type { GateEventStore } from "./store/gate-events.ts";
import type { UsageEventStore } from "./store/usage-events.ts";
import type { CrossingStore } from "./thresholds/store.ts";

export interface IngestionRetentionReport {
  usageEvents: number;
  gateEvents: number;
  gateHours: number;
  crossings: number;
  jobs: number;
  arrivals: number;
}

/** Failed one-off Agenda jobs are kept this long for inspection, then purged. */
const ENDED_JOB_DAYS = 7;

/** What a retention pass deletes from, and when recent arrivals stop mattering. */
export interface RetentionDeps {
  jobs: Pick<JobStore, "openIds">;
  events: Pick<UsageEventStore, "deleteReceivedBefore">;
  gates: Pick<GateEventStore, "deleteReceivedBefore" | "deleteHoursBefore">;
  crossings: Pick<CrossingStore, "deleteEndedBefore">;
  scheduler: Pick<JobScheduler, "purgeEnded">;
  arrivals: Pick<ArrivalStore, "deleteBefore">;
  lateChangeWindowMs: number;
}

/**
 * One retention pass: old events, old hour buckets of the gate-event listing, crossings of
 * long-ended periods, failed scheduler jobs. Counters are kept: one document per user and
 * period or month holds its totals. Whatever a job still open may need when it is taken over
 * (its events) is kept. Every step deletes by a cut-off, so a pass cut short is
 * finished by the next one, and a second pass deletes nothing. Any replica may run it.
 */
export async function runIngestionRetention(deps: RetentionDeps, p: RetentionPolicy, now: Date): Promise<IngestionRetentionReport> {
  const open = await deps.jobs.openIds();
  const ago = (days: number) => new Date(now.getTime() - days * DAY_MS);
  const usageEvents = await deps.events.deleteReceivedBefore(ago(p.usageEventDays), open);
  const gateEvents = await deps.gates.deleteReceivedBefore(ago(p.gateEventDays), open);
  const gateHours = await deps.gates.deleteHoursBefore(ago(p.gateEventDays));
  const crossings = await deps.crossings.deleteEndedBefore(crossingsClosedBefore(now, p));
  const jobs = await deps.scheduler.purgeEnded(ago(ENDED_JOB_DAYS));
  // Lists of recent arrivals a restarted process did not delete itself (late-changes/arrivals.ts).
  const arrivals = await deps.arrivals.deleteBefore(new Date(now.getTime() - deps.lateChangeWindowMs));
  return { usageEvents, gateEvents, gateHours, crossings, jobs, arrivals };
}
