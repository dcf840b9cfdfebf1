import { characters } from "@meter/lib/characters";
import { normalizeModel, toDollars } from "@meter/rules";
import type { PlanInfo } from "../adapters/plans.ts";
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
  return {
    leaseId: holder,
    granted: toDollars(lease.granted ?? 0),
    added: toDollars(f.spend?.added ?? 0),
    returned: toDollars(f.spend?.returned ?? 0),
    spent: toDollars(lease.spent ?? 0),
    expiresAt: lease.expires_at ? toTimestamp(lease.expires_at) : undefined,
    ttlMs: BigInt(f.ttlMs),
    remaining: toDollars(f.spend?.remaining ?? 0),
    holders: f.spend?.holders ?? 0,
    periodEnd: toTimestamp(f.periodEnd),
    spendLimited: f.spendLimited,
    tokens: f.model ? tokenLeaseMessage(lease, f.model.name, f.model.grant) : undefined,
  };
}

/** The amounts of an ask (`prefix` names its fields: "" for the user's, "team." for its team's), checked: dollars, and tokens of `model`. */
export function requireAsk(prefix: string, a: { need: number; want: number; model?: string; needTokens: bigint; wantTokens: bigint }) {
  const need = requireDollars(`${prefix}need`, a.need);
  const want = requireDollars(`${prefix}want`, a.want);
  if (want < need) throw rpcError.invalid(`${prefix}want must be at least ${prefix}need`);
  const needTokens = requireTokens(`${prefix}need_tokens`, a.needTokens);
  const wantTokens = requireTokens(`${prefix}want_tokens`, a.wantTokens);
  if (wantTokens < needTokens) throw rpcError.invalid(`${prefix}want_tokens must be at least ${prefix}need_tokens`);
  if (a.model === undefined && wantTokens > 0) throw rpcError.invalid(`${prefix}need_tokens and ${prefix}want_tokens need ${prefix || "a "}model`);
  if (a.model !== undefined && (a.model.length < 1 || characters(a.model) > 255)) throw rpcError.invalid(`${prefix}model must be 1-255 characters`);
  return { need, want, needTokens, wantTokens };
}

/** What a request offers back (AcquireLeaseRequest.spare, spare_tokens; with `prefix` "team.", TeamAsk's), checked. */
export function requireSpare(prefix: string, a: { spare: number; spareTokens: bigint; model?: string }) {
  const spare = requireDollars(`${prefix}spare`, a.spare);
  const spareTokens = requireTokens(`${prefix}spare_tokens`, a.spareTokens);
  if (spareTokens > 0 && a.model === undefined) throw rpcError.invalid(`${prefix}spare_tokens needs ${prefix}model`);
  return { spare, spareTokens };
}

/** Models one release may name (a lease holds tokens of the capped models a replica called). */
const MAX_RELEASED_MODELS = 256;

/**
 * The token slices a release names (`field`: its request field), by field-key encoded model as
 * the counter keeps them: only the models `plan` caps have a token slice to give back; any other
 * name would only add a field to the counter, which every later update rewrites (domain/counter-bounds.ts).
 */
export function releasedTokens(field: string, used: Record<string, bigint>, plan: Pick<PlanInfo, "pricing" | "modelLimits"> | null): Record<string, number> {
  const models = Object.entries(used);
  if (models.length > MAX_RELEASED_MODELS) throw rpcError.invalid(`${field} may name at most ${MAX_RELEASED_MODELS} models`);
  const out: Record<string, number> = {};
  for (const [model, n] of models) {
    if (model.length < 1 || characters(model) > 255) throw rpcError.invalid(`${field} keys must be model names of 1-255 characters`);
    const name = normalizeModel(model, plan?.pricing ?? null);
    const tokens = requireTokens(`${field}.${model}`, n);
    if (plan && Object.hasOwn(plan.modelLimits, name)) out[encodeKey(name)] = tokens;
  }
  return out;
}

/** A lease's slice of a model's token cap (a user's, or a team's: leases/team.ts). */
export function tokenLeaseMessage(lease: LeaseEntry, model: string, grant: Grant | undefined) {
  const tokens = own(lease.tokens, encodeKey(model));
  return {
    model,
    granted: BigInt(Math.round(tokens?.granted ?? 0)),
    added: BigInt(grant?.added ?? 0),
    returned: BigInt(grant?.returned ?? 0),
    spent: BigInt(Math.round(tokens?.spent ?? 0)),
    remaining: grant?.remaining ?? 0,
    holders: grant?.holders ?? 0,
  };
}
