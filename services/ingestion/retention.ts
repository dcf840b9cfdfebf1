import { DAY_MS } from "@meter/lib/time";
import type { IngestionDeps } from "./deps.ts";

/** How long each collection keeps what (README, "Retention"). */
export interface RetentionPolicy {
  /** Days usage events are kept after arrival; also how long a resent event id is a duplicate. Default 35. */
  usageEventDays: number;
  /**
   * Days gate events are kept after arrival, and the listing's hour buckets after their hour:
   * what the gate-event listing can show. Default 90.
   */
  gateEventDays: number;
  /**
   * Days threshold crossings are kept after their period ended. A period that ended longer
   * ago than this announces no more crossings, so a deleted one never fires again. Default 35.
   */
  crossingDays: number;
}

export const RETENTION_DEFAULTS: RetentionPolicy = { usageEventDays: 35, gateEventDays: 90, crossingDays: 35 };

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

/** Periods that ended before this announce no more crossings (their crossings may be gone). */
export function crossingsClosedBefore(now: Date, p: RetentionPolicy): Date {
  return new Date(now.getTime() - p.crossingDays * DAY_MS);
}

/**
 * One retention pass: old events, old hour buckets of the gate-event listing, crossings of
 * long-ended periods, failed scheduler jobs. Counters are kept: one document per user and
 * period or month holds its totals. Whatever a job still open may need when it is taken over
 * (its events) is kept. Every step deletes by a cut-off, so a pass cut short is
 * finished by the next one, and a second pass deletes nothing. Any replica may run it.
 */
export async function runIngestionRetention(deps: IngestionDeps, p: RetentionPolicy, now: Date): Promise<IngestionRetentionReport> {
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
