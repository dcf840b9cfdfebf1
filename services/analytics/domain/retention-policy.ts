import { DAY_MS, dayOf } from "./windows.ts";

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

/** Days before this one may have lost their ledger (frozen): one day behind the first open day. */
export function frozenBefore(now: Date, p: RetentionPolicy): string {
  return dayOf(new Date(Date.parse(`${firstOpenDay(now, p)}T00:00:00Z`) - DAY_MS));
}

/** The first day whose rollup is kept; facts for earlier days are counted nowhere. */
export function firstRollupDay(now: Date, p: RetentionPolicy): string {
  return dayOf(new Date(now.getTime() - (p.rollupDays - 1) * DAY_MS));
}
