/**
 * What the answers show of credits: a grant as answered, the balance, and what the period cap
 * gains from credits. Every route, the session view and leases compute the balance here.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import { toDollars, toNano } from "@meter/rules";
import { own } from "@meter/lib/own";
import { optionalTimestamp, toTimestamp } from "@meter/lib/time";
import { encodeGrantKey } from "../domain/field-keys.ts";
import { balanceOf, forgiven, latePayment, statusAt, type GrantState } from "./allocate.ts";
import { accountId, overdraftSince, teamOwner, tracksCredited, userOwner, type CreditAccountDoc } from "./account.ts";
import type { TeamAttribution } from "../domain/attribution.ts";
import { poolCounterId } from "../teams/shares.ts";
import type { GrantRecordDoc } from "./store.ts";
import type { PeriodSpend } from "../store/counters.ts";

/** A grant's live state from its record (what the account takes when it is created). */
export function stateOf(r: GrantRecordDoc): GrantState {
  return {
    id: r.grant_id,
    amount_nano: r.amount_nano,
    remaining_nano: r.amount_nano,
    kind: r.kind,
    priority: r.priority,
    effective_at: r.effective_at,
    expires_at: r.expires_at,
    created_at: r.created_at,
  };
}

/**
 * The account as answers read it at `now`: with what grants that took effect since its overdraft
 * arose paid of it (allocate.ts latePayment), written down or not, as the account's next write
 * will. Reading the result so again changes nothing, so a caller answering from one account
 * several times (a listing of its grants) computes it once.
 */
export function asAnswered(account: CreditAccountDoc | null, now: Date): CreditAccountDoc | null {
  const since = account === null ? undefined : overdraftSince(account);
  if (account === null || since === undefined || account.overdraft_nano <= 0) return account;
  const { taken, left } = latePayment(Object.values(account.grants), account.overdraft_nano, since, now.getTime());
  const grants = Object.fromEntries(
    Object.entries(account.grants).map(([key, g]) => {
      const paid = taken.get(g.id) ?? 0;
      if (paid === 0) return [key, g];
      const remaining_nano = g.remaining_nano - paid;
      return [key, remaining_nano <= 0 ? { ...g, remaining_nano, final: "depleted" as const } : { ...g, remaining_nano }];
    }),
  );
  const { overdraft_since: _, ...rest } = account;
  return { ...rest, grants, overdraft_nano: left };
}

/** A grant as answered: its record, with the account's live state while it has one. */
export function grantMessage(r: GrantRecordDoc, account: CreditAccountDoc | null, now: Date) {
  const live = own(asAnswered(account, now)?.grants, encodeGrantKey(r.grant_id));
  const status = live ? statusAt(live, now.getTime()) : (r.status ?? statusAt(stateOf(r), now.getTime()));
  const remaining = live ? (status === "expired" || status === "voided" ? 0 : live.remaining_nano) : r.status ? 0 : r.amount_nano;
  return {
    id: r.grant_id,
    amount: toDollars(r.amount_nano),
    remaining: toDollars(remaining),
    kind: r.kind,
    priority: r.priority,
    effectiveAt: toTimestamp(r.effective_at),
    expiresAt: optionalTimestamp(r.expires_at),
    status,
    description: r.description ?? undefined,
    metadata: r.metadata === null ? undefined : (JSON.parse(r.metadata) as JsonObject),
    createdAt: toTimestamp(r.created_at),
  };
}

/** An owner's credits now, in nano-dollars. */
export interface CreditView {
  balance: number;
  pending: number;
  overdraft: number;
  /** Drawn in the billing period asked for. */
  drawn: number;
  /** Whether that period's draws leave out what it spent without credits (account.ts tracksCredited). */
  tracked: boolean;
  /** Active grants that expire, soonest first. */
  expiries: { grantId: string; at: Date; remaining: number }[];
}

export function creditView(account: CreditAccountDoc | null, periodStart: Date | null, now: Date): CreditView {
  const t = now.getTime();
  const answered = asAnswered(account, now);
  const grants = Object.values(answered?.grants ?? {});
  const overdraft = answered?.overdraft_nano ?? 0;
  const { balance, pending } = balanceOf(grants, overdraft, t);
  const expiries = grants
    .filter((g) => g.expires_at !== null && statusAt(g, t) === "active")
    .sort((a, b) => a.expires_at!.getTime() - b.expires_at!.getTime())
    .map((g) => ({ grantId: g.id, at: g.expires_at!, remaining: g.remaining_nano }));
  const entry = periodStart ? own(answered?.drawn, String(periodStart.getTime())) : undefined;
  return { balance, pending, overdraft, drawn: entry?.n ?? 0, tracked: tracksCredited(entry), expiries };
}

/** The session view's and GetCredits' money fields in dollars. */
export function sessionCredits(v: CreditView, lowAt: number | undefined) {
  return {
    balance: toDollars(v.balance),
    pending: toDollars(v.pending),
    lowAt,
    expiries: v.expiries.map((e) => ({ grantId: e.grantId, at: toTimestamp(e.at), remaining: toDollars(e.remaining) })),
  };
}

/**
 * The period spend cap with credits (BUDGETS.md §3): allowance + drawn in the period + balance,
 * in nano-dollars, never below 0. A settle turns balance into drawn, so it does not move it.
 * What the period spent beyond the allowance while its plan drew no credits (`uncreditedNano`:
 * the counter's spend of such events) is never drawn, so the cap rises by as much: the balance
 * is what is left to spend whatever the user spent before moving to a plan with credits.
 */
export function creditCapNano(allowanceNano: number, v: CreditView, uncreditedNano = 0): number {
  return Math.max(0, allowanceNano + (v.tracked ? forgiven(uncreditedNano, allowanceNano) : 0) + v.drawn + v.balance);
}

/** An owner's period spend cap with credits, given what its counter spent while credits were off (creditCapNano). */
export type OwnCreditCap = (uncreditedNano: number) => { capNano: number; balanceNano: number; lowAt: number | undefined };

/**
 * An owner's credits as the session view, GetLimits and leases see them: read when the plan in
 * force has credits enabled (one read by `_id`), else null.
 */
export async function creditsInForce(
  store: { account(id: string): Promise<CreditAccountDoc | null> },
  productId: string,
  userId: string,
  plan: { creditsEnabled: boolean; maxSpendPerPeriod?: number; creditsLowAt?: number } | null,
  periodStart: Date,
  now: Date,
): Promise<{ view: CreditView; cap: OwnCreditCap | null } | null> {
  if (!plan?.creditsEnabled) return null;
  const view = creditView(await store.account(accountId(productId, userOwner(userId))), periodStart, now);
  // Without an allowance (unlimited) nothing is drawn and the cap is not extended.
  const allowance = plan.maxSpendPerPeriod;
  const cap: OwnCreditCap | null =
    allowance === undefined ? null : (uncredited) => ({ capNano: creditCapNano(toNano(allowance), view, uncredited), balanceNano: view.balance, lowAt: plan.creditsLowAt });
  return { view, cap };
}

/** A team's pool as the session view and the team's dimensions see it. */
export interface TeamCredits {
  view: CreditView;
  cap: { capNano: number; balanceNano: number; lowAt: number | undefined } | null;
}

/**
 * A team's pool when the team plan in force draws credits (two reads by `_id`: the pool's account
 * and the team's pool counter), else null; the
 * answer takes the team's period spend (nano-dollars). The `team:total_spend` cap is the team
 * allowance + drawn + balance, plus what the team's sum holds that was never handed to the pool
 * (members' spend within their own allowance or paid by their own grants: BUDGETS.md §4, own first).
 */
export async function teamCreditsInForce(
  store: { account(id: string): Promise<CreditAccountDoc | null> },
  teamCounters: { spends(ids: readonly string[]): Promise<Map<string, PeriodSpend>> },
  productId: string,
  a: TeamAttribution,
  now: Date,
): Promise<((spendNano: number) => TeamCredits) | null> {
  if (!a.plan.creditsEnabled) return null;
  const pool = poolCounterId(a.counterId);
  const [account, direct] = await Promise.all([store.account(accountId(productId, teamOwner(a.team.externalTeamId))), teamCounters.spends([pool])]);
  const view = creditView(account, a.period.start, now);
  const allowance = a.plan.maxSpendPerPeriod;
  // What the team pays in this period: what members handed over, and its pool counter.
  const pooled = (account?.pooled?.[String(a.period.start.getTime())]?.n ?? 0) + (direct.get(pool)?.spend ?? 0);
  return (spendNano) => ({
    view,
    cap:
      allowance === undefined
        ? null
        : { capNano: creditCapNano(toNano(allowance), view) + Math.max(0, spendNano - pooled), balanceNano: view.balance, lowAt: a.plan.creditsLowAt },
  });
}

/**
 * The team's period spend cap with its pool, in nano-dollars: allowance + drawn + balance, what a
 * lease of the team's cap grants against (constant while usage is drawn: a settle turns balance
 * into drawn). Null when the team plan draws no credits or has no allowance. One read: the pool's
 * account. The session's cap also adds what members' own grants paid of the team's spend; a lease
 * leaves that out: it would come from two counters that are not written at once, and between the
 * two writes the sum would count a batch as both spent and not pooled. So a lease errs low for a
 * team whose members hold credits of their own, never high.
 */
export async function teamCapWithPoolNano(
  store: { account(id: string): Promise<CreditAccountDoc | null> },
  productId: string,
  a: TeamAttribution,
  now: Date,
): Promise<number | null> {
  const allowance = a.plan.maxSpendPerPeriod;
  if (!a.plan.creditsEnabled || allowance === undefined) return null;
  const account = await store.account(accountId(productId, teamOwner(a.team.externalTeamId)));
  return creditCapNano(toNano(allowance), creditView(account, a.period.start, now));
}
