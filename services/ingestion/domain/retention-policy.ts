import { DAY_MS } from "@meter/lib/time";

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

/** Periods that ended before this announce no more crossings (their crossings may be gone). */
export function crossingsClosedBefore(now: Date, p: RetentionPolicy): Date {
  return new Date(now.getTime() - p.crossingDays * DAY_MS);
}
