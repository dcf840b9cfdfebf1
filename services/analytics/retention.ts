import { DAY_MS, dayOf } from "./windows.ts";
import type { AnalyticsDeps } from "./deps.ts";

/** How long each collection keeps what (see README, "Retention"). */
export interface RetentionPolicy {
  /** Days of raw facts kept in the ledger; older days are final. Default 35. */
  ledgerDays: number;
  /** Days of rollups kept. Default 731: the previous period of the longest (365-day) window. */
  rollupDays: number;
}

export const RETENTION_DEFAULTS: RetentionPolicy = { ledgerDays: 35, rollupDays: 731 };

/**
 * The first day RecordEvents still stores facts for: days before it are final (their ledger
 * may be gone, and recomputing them would replace their rollup by the late facts alone).
 */
export function firstOpenDay(now: Date, p: RetentionPolicy): string {
  return dayOf(new Date(now.getTime() - (p.ledgerDays - 1) * DAY_MS));
}

export interface RetentionReport {
  ledgerSegments: number;
  dayRollups: number;
  leases: number;
}

/**
 * One retention pass. Rolls up every dirty day first, so a day's rollup covers its whole
 * ledger before that ledger goes. Segments are deleted one day behind the first open day: a
 * RecordEvents call that began before midnight may still store facts for the day that just
 * closed, and it is done long before the next pass. Days still marked dirty keep their
 * segments until a later pass. Idempotent; any replica may run it.
 */
export async function runRetention(deps: AnalyticsDeps, p: RetentionPolicy, now: Date): Promise<RetentionReport> {
  await deps.roller.rollPending(Infinity);
  const pruneBefore = dayOf(new Date(new Date(`${firstOpenDay(now, p)}T00:00:00Z`).getTime() - DAY_MS));
  const stillDirty = [...(await deps.dirty.pending()).values()].map((x) => x.bucket.day).filter((d) => d < pruneBefore);
  const ledgerSegments = await deps.ledger.deleteBefore(pruneBefore, stillDirty);
  const dayRollups = await deps.rollups.deleteBefore(dayOf(new Date(now.getTime() - (p.rollupDays - 1) * DAY_MS)));
  const leases = await deps.dirty.sweepLeases(now);
  return { ledgerSegments, dayRollups, leases };
}
