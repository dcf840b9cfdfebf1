/**
 * The team part of a budget lease (BUDGETS.md §4): a holder's slices of the period spend cap and
 * the model token caps of its member's team, kept in the team's period counter (`team_counters`)
 * under the holder id, and of the team's windows, each beside its count (teamWindowHome), so the
 * replicas serving different members of one team grant against one ledger of slices
 * (cap - settled - outstanding, leases/store.ts, windows/slices.ts). One slice per holder, shared
 * by every member the holder serves; usage events spent from it name the holder as lease_id and
 * settle it in the team's own updates (teams/count.ts). A member's seat windows (member-scope
 * limits) are the member's own: acquireMemberWindows.
 */
import { normalizeModel, toDollars, toNano } from "@meter/rules";
import { own } from "@meter/lib/own";
import { encodeKey } from "../domain/field-keys.ts";
import type { TeamAsk, WindowLease, WindowUse } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { toTimestamp } from "@meter/lib/time";
import type { KnownUser, PlanInfo } from "../adapters/plans.ts";
import { attributeTeam, type TeamAttribution } from "../domain/attribution.ts";
import type { Grant, LeaseEntry } from "../domain/lease-policy.ts";
import type { Ask, LeaseStore } from "./store.ts";
import { releasedTokens, requireAsk, requireDollars, requireSpare, tokenLeaseMessage } from "./request.ts";
import { acquireWindows, releasedWindows, userWindowHome, type SliceHome } from "../windows/lease-request.ts";
import type { WindowLeaseStore } from "../windows/lease-store.ts";
import { windowDocId } from "../windows/shares.ts";
import { inPeriodWindow, memberPrefix, scopeOf } from "../teams/shares.ts";
import { create } from "@bufbuild/protobuf";
import { WindowLeaseSchema, type WindowAsk } from "@meter/proto/meter/ingestion/v1/ingestion_pb";

/** Where a team's slices are kept: the spend cap's and the in-period windows' in its period counter, the other windows' in its window document. */
export interface TeamLeaseStores {
  teams: LeaseStore;
  /** The team's window documents (`<product>|w|<team>` in `team_counters`). */
  teamWindows: WindowLeaseStore;
  /** The window slices kept in the team's period counters (`team_counters`). */
  teamCounterWindows: WindowLeaseStore;
}

export interface TeamLeaseInput {
  stores: TeamLeaseStores;
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

/** The team plan as its windows of one scope see it: team-scope ones count the team's sum, member-scope ones each member apart (in the member's window document). */
function scopePlan(t: TeamAttribution, scope: "team" | "member"): PlanInfo {
  return { ...t.plan, limits: t.plan.limits.filter((l) => scopeOf(l) === scope) };
}

/**
 * The home of a team window's slices: beside its count (teams/count.ts), in the period counter
 * for a calendar or period window within the team's period, else in the team's window document.
 */
function teamWindowHome(stores: TeamLeaseStores, productId: string, t: TeamAttribution): (slice: { key: string; end: number | null }) => SliceHome {
  const ref = { productId, userId: t.team.id };
  const counter: SliceHome = { store: stores.teamCounterWindows, id: t.counterId, ref: { ...ref, start: t.period.start, end: t.period.end } };
  const doc: SliceHome = { store: stores.teamWindows, id: windowDocId(productId, t.team.id), ref };
  return (s) => (s.end !== null && inPeriodWindow({ key: s.key, end: s.end, n: 0 }, t.period.start, t.period.end) ? counter : doc);
}

/** Grants the team slices asked for (spend and the model's tokens, then windows); undefined when the user is in no team with a plan in force now. */
export async function acquireTeamSlice(i: TeamLeaseInput, ask: TeamAsk) {
  const { need, want, needTokens, wantTokens } = requireAsk("team.", ask);
  const { spare, spareTokens } = requireSpare("team.", ask);
  const t = attributeTeam(i.productId, i.user, i.now);
  if (!t) return undefined;
  // A team whose plan draws credits: its pool extends the cap as it does in the session view.
  const pooled = t.plan.creditsEnabled && i.capWithPool ? await i.capWithPool(t) : null;
  const cap = pooled === null ? teamCapNano(t) : Math.round(pooled * t.plan.hardGateAt);
  const asks: Ask[] = cap === null ? [] : [{ dim: null, cap, need: toNano(need), want: toNano(want), spare: toNano(spare) }];
  // The model as the team plan names it (its prices may normalize it otherwise than the member's).
  const model = ask.model === undefined ? undefined : normalizeModel(ask.model, t.plan.pricing);
  const tokenLimit = model === undefined ? undefined : own(t.plan.modelLimits, model);
  if (tokenLimit) asks.push({ dim: encodeKey(model!), cap: tokenLimit.maxTokensPerPeriod * t.plan.hardGateAt, need: needTokens, want: wantTokens, spare: spareTokens });
  const ref = { id: t.counterId, productId: i.productId, userId: t.team.id, start: t.period.start, end: t.period.end };
  const view = asks.length === 0 ? null : await i.stores.teams.acquire(ref, { holder: i.holder, asks, ttlMs: i.ttlMs, graceMs: i.graceMs, now: i.now });
  const spend = view && cap !== null ? view.grants[0] : undefined;
  const tokens = view && tokenLimit ? tokenLeaseMessage(view.lease, model!, view.grants[asks.length - 1]) : undefined;
  // After the spend slice: both may live in the period counter, and each write is conditional on its version.
  const windows = await acquireWindows({
    home: teamWindowHome(i.stores, i.productId, t),
    plan: scopePlan(t, "team"),
    period: t.period,
    holder: i.holder,
    asks: ask.windows,
    ttlMs: i.ttlMs,
    graceMs: i.graceMs,
    now: i.now,
  });
  return { ...teamLeaseMessage(t, view?.lease ?? { granted: 0, spent: 0 }, cap !== null, spend, windows), tokens };
}

/**
 * Sets the holder's team slices to what it used in all (`used` dollars, when given; `windows`
 * each named window); undefined when the user is in no team now, null when the team's documents
 * hold no such lease.
 */
export async function releaseTeamSlice(
  stores: TeamLeaseStores,
  productId: string,
  user: KnownUser,
  holder: string,
  used: { used?: number; tokens: Record<string, bigint>; windows: readonly WindowUse[] },
  now: Date,
) {
  const t = attributeTeam(productId, user, now);
  if (!t) return undefined;
  const dollars = used.used === undefined ? undefined : toNano(requireDollars("team_used", used.used));
  const tokens = releasedTokens("team_used_tokens", used.tokens, t.plan);
  const windows = releasedWindows("team_used_windows", used.windows, scopePlan(t, "team"), t.period, now, teamWindowHome(stores, productId, t));
  const period = dollars !== undefined || Object.keys(tokens).length > 0;
  const [lease, ...slices] = await Promise.all([
    period ? stores.teams.release(t.counterId, holder, dollars, tokens) : null,
    ...[...windows.values()].map(({ home, used }) => home.store.release(home.id, holder, used)),
  ]);
  const found = lease ?? slices.find((l) => l !== null);
  if (!found) return null;
  return teamLeaseMessage(t, lease ?? { granted: 0, spent: 0, expires_at: found.expires_at }, teamCapNano(t) !== null);
}

/** What a member-scope window grant needs: the member's window document and who asks. */
export interface MemberWindowsInput {
  store: WindowLeaseStore;
  productId: string;
  userId: string;
  user: KnownUser;
  holder: string;
  ttlMs: number;
  graceMs: number;
  now: Date;
}

/**
 * Grants slices of the member-scope windows of the user's team plan, kept in the user's window
 * document beside their counts (fields prefixed with the team: teams/shares.ts memberPrefix), one
 * per holder; every ask is answered `limited: false` when the user is in no team with a plan now.
 */
export async function acquireMemberWindows(i: MemberWindowsInput, asks: readonly WindowAsk[]): Promise<WindowLease[]> {
  const t = attributeTeam(i.productId, i.user, i.now);
  if (!t) return asks.map((a) => create(WindowLeaseSchema, { dimension: a.dimension, limited: false }));
  return acquireWindows({
    home: userWindowHome(i.store, i.productId, i.userId),
    keyPrefix: memberPrefix(t.team.id),
    plan: scopePlan(t, "member"),
    period: t.period,
    holder: i.holder,
    asks,
    ttlMs: i.ttlMs,
    graceMs: i.graceMs,
    now: i.now,
  });
}

/** The member-scope window slices a release names, keyed as stored in the user's window document; empty when the user is in no team now. */
export function releasedMemberWindows(store: WindowLeaseStore, productId: string, userId: string, user: KnownUser, uses: readonly WindowUse[], now: Date): Record<string, number> {
  const t = attributeTeam(productId, user, now);
  if (!t || uses.length === 0) return {};
  const released = releasedWindows("used_member_windows", uses, scopePlan(t, "member"), t.period, now, userWindowHome(store, productId, userId), memberPrefix(t.team.id));
  return [...released.values()][0]?.used ?? {};
}

function teamLeaseMessage(t: TeamAttribution, lease: LeaseEntry, spendLimited: boolean, g?: Grant, windows: WindowLease[] = []) {
  return {
    teamId: t.team.externalTeamId,
    spendLimited,
    granted: toDollars(lease.granted ?? 0),
    added: toDollars(g?.added ?? 0),
    spent: toDollars(lease.spent ?? 0),
    remaining: toDollars(g?.remaining ?? 0),
    returned: toDollars(g?.returned ?? 0),
    holders: g?.holders ?? 0,
    expiresAt: lease.expires_at ? toTimestamp(lease.expires_at) : undefined,
    periodEnd: toTimestamp(t.period.end),
    windows,
  };
}
