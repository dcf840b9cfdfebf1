import { rpcError } from "@meter/lib/errors";
import { toTimestamp } from "@meter/lib/time";
import type { LeaseEntry } from "../domain/lease-policy.ts";
import type { LeaseView } from "../leases/store.ts";

/** Holder ids double as lease ids and as field names in the counter: a safe alphabet only. */
export const LEASE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Longest lease a caller may ask for (ms). */
export const MAX_LEASE_TTL_MS = 3_600_000;

export function requireLeaseId(field: string, id: string): string {
  if (!LEASE_ID.test(id)) throw rpcError.invalid(`${field} must be 1-64 letters, digits, _ or -`);
  return id;
}

export function requireDollars(field: string, v: number): number {
  if (!Number.isFinite(v) || v < 0 || v > 1e12) throw rpcError.invalid(`${field} must be a number of dollars between 0 and 10^12`);
  return v;
}

export function leaseMessage(holder: string, lease: LeaseEntry, extra: Partial<LeaseView> & { ttlMs: number; periodEnd: Date }) {
  return {
    leaseId: holder,
    granted: lease.granted,
    added: extra.added ?? 0,
    spent: lease.spent ?? 0,
    expiresAt: lease.expires_at ? toTimestamp(lease.expires_at) : undefined,
    ttlMs: BigInt(extra.ttlMs),
    remaining: extra.remaining ?? 0,
    holders: extra.holders ?? 0,
    periodEnd: toTimestamp(extra.periodEnd),
  };
}
