/**
 * The team part of a budget lease (BUDGETS.md §4): a holder's slice of the period spend cap of
 * its member's team, kept in the team's period counter (`team_counters`) under the holder id,
 * so the replicas serving different members of one team grant against one ledger of slices
 * (cap - settled - outstanding, leases/store.ts). One slice per holder and team period, shared
 * by every member the holder serves; usage events spent from it name the holder as lease_id and
 * settle it in the team counter's own update (teams/count.ts).
 */
import { toDollars, toNano } from "@meter/rules";
import type { TeamAsk } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { toTimestamp } from "@meter/lib/time";
import type { KnownUser } from "../adapters/plans.ts";
import { attributeTeam, type TeamAttribution } from "../domain/attribution.ts";
import type { Grant, LeaseEntry } from "../domain/lease-policy.ts";
import type { LeaseStore } from "./store.ts";
import { requireDollars } from "./request.ts";
import { rpcError } from "@meter/lib/errors";

export interface TeamLeaseInput {
  store: LeaseStore;
  productId: string;
  user: KnownUser;
  holder: string;
  ttlMs: number;
  graceMs: number;
  now: Date;
  /** The team's cap with its pool (credits/view.ts teamCapWithPoolNano), for a team plan that draws credits. */
  capWithPool?: (t: TeamAttribution) => Promise<number | null>;
}

/** The team's period spend cap times its hard mark, in nano-dollars; null when the team plan has none. */
export function teamCapNano(t: TeamAttribution): number | null {
  const max = t.plan.maxSpendPerPeriod;
  return max === undefined || max === null ? null : Math.round(toNano(max) * t.plan.hardGateAt);
}

/** Grants the team slice asked for; undefined when the user is in no team with a plan in force now. */
export async function acquireTeamSlice(i: TeamLeaseInput, ask: TeamAsk) {
  const need = requireDollars("team.need", ask.need);
  const want = requireDollars("team.want", ask.want);
  if (want < need) throw rpcError.invalid("team.want must be at least team.need");
  const t = attributeTeam(i.productId, i.user, i.now);
  if (!t) return undefined;
  // A team whose plan draws credits: its pool extends the cap as it does in the session view.
  const pooled = t.plan.creditsEnabled && i.capWithPool ? await i.capWithPool(t) : null;
  const cap = pooled === null ? teamCapNano(t) : Math.round(pooled * t.plan.hardGateAt);
  if (cap === null) return teamLeaseMessage(t, { granted: 0, spent: 0 }, false);
  const ref = { id: t.counterId, productId: i.productId, userId: t.team.id, start: t.period.start, end: t.period.end };
  const view = await i.store.acquire(ref, { holder: i.holder, asks: [{ dim: null, cap, need: toNano(need), want: toNano(want) }], ttlMs: i.ttlMs, graceMs: i.graceMs, now: i.now });
  return teamLeaseMessage(t, view.lease, true, view.grants[0]);
}

/** Sets the holder's team slice to what it used in all; undefined when the user is in no team now, null when the team counter holds no such lease. */
export async function releaseTeamSlice(store: LeaseStore, productId: string, user: KnownUser, holder: string, used: number, now: Date) {
  const t = attributeTeam(productId, user, now);
  if (!t) return undefined;
  const lease = await store.release(t.counterId, holder, toNano(requireDollars("team_used", used)), {});
  return lease ? teamLeaseMessage(t, lease, teamCapNano(t) !== null) : null;
}

function teamLeaseMessage(t: TeamAttribution, lease: LeaseEntry, spendLimited: boolean, g?: Grant) {
  return {
    teamId: t.team.externalTeamId,
    spendLimited,
    granted: toDollars(lease.granted),
    added: toDollars(g?.added ?? 0),
    spent: toDollars(lease.spent ?? 0),
    remaining: toDollars(g?.remaining ?? 0),
    holders: g?.holders ?? 0,
    expiresAt: lease.expires_at ? toTimestamp(lease.expires_at) : undefined,
    periodEnd: toTimestamp(t.period.end),
  };
}
