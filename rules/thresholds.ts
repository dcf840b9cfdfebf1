import { toNano } from "./money.ts";

/** Spend thresholds (percent of max_spend_per_period) that fire usage.threshold.* events. */
export const THRESHOLDS = [50, 80, 100] as const;

/**
 * Whether a spend limit has thresholds at all. Only a finite, positive limit has: a limit of
 * 0 blocks every call and has no meaningful percentages.
 */
export function hasThresholds(limit: number | null | undefined): limit is number {
  return typeof limit === "number" && Number.isFinite(limit) && limit > 0;
}

/** The thresholds that period spend (dollars) has reached, compared in whole nano-dollars (money.ts). */
export function reachedThresholds(spend: number, limit: number | null | undefined): number[] {
  if (!hasThresholds(limit)) return [];
  const spent = toNano(spend);
  const cap = toNano(limit);
  return THRESHOLDS.filter((pct) => spent >= Math.round((cap * pct) / 100));
}
