import { toDollars } from "@meter/rules";
import { rpcError } from "@meter/lib/errors";
import { own } from "@meter/lib/own";
import { toTimestamp } from "@meter/lib/time";
import type { Grant, LeaseEntry } from "../domain/lease-policy.ts";
import { encodeKey } from "../domain/field-keys.ts";

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

export function requireTokens(field: string, v: bigint): number {
  if (v < 0n || v > BigInt(Number.MAX_SAFE_INTEGER)) throw rpcError.invalid(`${field} must be a whole number of tokens between 0 and 2^53 - 1`);
  return Number(v);
}

export interface LeaseFacts {
  ttlMs: number;
  periodEnd: Date;
  spendLimited: boolean;
  /** The dollars grant of this request (acquire with a spend cap). */
  spend?: Grant;
  /** The model asked for and its token grant (acquire with a token cap of that model). */
  model?: { name: string; grant?: Grant };
}

export function leaseMessage(holder: string, lease: LeaseEntry, f: LeaseFacts) {
  const tokens = f.model ? own(lease.tokens, encodeKey(f.model.name)) : undefined;
  return {
    leaseId: holder,
    granted: toDollars(lease.granted),
    added: toDollars(f.spend?.added ?? 0),
    spent: toDollars(lease.spent ?? 0),
    expiresAt: lease.expires_at ? toTimestamp(lease.expires_at) : undefined,
    ttlMs: BigInt(f.ttlMs),
    remaining: toDollars(f.spend?.remaining ?? 0),
    holders: f.spend?.holders ?? 0,
    periodEnd: toTimestamp(f.periodEnd),
    spendLimited: f.spendLimited,
    tokens: f.model
      ? {
          model: f.model.name,
          granted: BigInt(Math.round(tokens?.granted ?? 0)),
          added: BigInt(f.model.grant?.added ?? 0),
          spent: BigInt(Math.round(tokens?.spent ?? 0)),
          remaining: f.model.grant?.remaining ?? 0,
          holders: f.model.grant?.holders ?? 0,
        }
      : undefined,
  };
}
