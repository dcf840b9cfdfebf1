// A user's prepaid credits (BUDGETS.md §3) as the console shows and grants them: a grant's
// status, the form's body, and what the period spend bar's max is made of. Pure functions (no
// DOM), tested in test/console-credit-words.test.ts.
import { creditsDrawn } from "@meter/rules";
import { fmtExactMoney } from "./format.ts";
import { localToIso, numberOrText } from "./inputs.ts";
import type { Dimension } from "./limits.ts";

export type GrantStatus = "pending" | "active" | "depleted" | "expired" | "voided";
export type GrantKind = "paid" | "promotional";
export type LedgerType = "grant" | "usage" | "expiry" | "void" | "overdraft";

/** A grant's status as a badge: what can still be drawn stands out, what is final is grey. */
export const STATUS_BADGE: Record<GrantStatus, string> = {
  pending: "warn",
  active: "good",
  depleted: "muted-badge",
  expired: "muted-badge",
  voided: "bad",
};

/** Only a grant with money that can still be drawn (now or later) has anything to void. */
export const voidable = (status: string) => status === "pending" || status === "active";

/** The words of a ledger entry's type; usage and overdraft entries sum an hour. */
export const LEDGER_TYPE: Record<LedgerType, string> = {
  grant: "Grant",
  usage: "Usage (hour)",
  expiry: "Expiry",
  void: "Void",
  overdraft: "Overdraft (hour)",
};

/** The grant form as typed: text everywhere, so that what was typed is what is sent. */
export interface GrantForm {
  id: string;
  amount: string;
  kind: GrantKind;
  priority: string;
  effective_at: string;
  expires_at: string;
  description: string;
}

export const newGrantForm = (id: string): GrantForm => ({ id, amount: "", kind: "paid", priority: "50", effective_at: "", expires_at: "", description: "" });

/**
 * The body of `POST /users/{user_id}/credits`: numbers where numbers were typed (anything else
 * as typed, for the API to refuse beside its field), dates from the viewer's zone as instants;
 * an empty effective date is the API's default (now), an empty expiry is never.
 */
export function grantBody(f: GrantForm) {
  return {
    id: f.id.trim(),
    amount: numberOrText(f.amount) ?? f.amount,
    kind: f.kind,
    priority: numberOrText(f.priority) ?? 50,
    ...(f.effective_at ? { effective_at: localToIso(f.effective_at) ?? f.effective_at } : {}),
    expires_at: f.expires_at ? (localToIso(f.expires_at) ?? f.expires_at) : null,
    description: f.description.trim() || null,
  };
}

/** The grant as a sentence for the confirmation step: what the operator is about to add. */
export function describeGrant(f: GrantForm, userId: string): string {
  const b = grantBody(f);
  const amount = typeof b.amount === "number" ? fmtExactMoney(b.amount) : `"${b.amount}"`;
  const when = f.effective_at ? `from ${new Date(f.effective_at).toLocaleString()}` : "from now";
  const until = f.expires_at ? `until ${new Date(f.expires_at).toLocaleString()}` : "never expiring";
  return `Grant ${amount} of ${b.kind} credits to ${userId}, priority ${b.priority}, ${when}, ${until}, as grant ${b.id}.`;
}

const nano = (n: number) => Math.round(n * 1e9) / 1e9;

/**
 * What the period spend bar's max is made of when the plan draws credits: the cap is the
 * allowance, the balance still to spend, and what the period already spent past the allowance
 * (`past`: drawn from credits, or spent before the user moved to a plan with credits, which
 * credits never pay: services/ingestion/README.md, credits).
 */
export function capParts(max: number, allowance: number, balance: number): { allowance: number; balance: number; past: number } {
  return { allowance, balance, past: creditsDrawn(max, allowance, balance) };
}

/**
 * The sentence under the period spend bar: its max includes credits. `pool`: what a team's pool
 * adds to a member's own cap (its team's headroom: docs/api.md, team credits), not part of the
 * member's own credits.
 */
export function capSentence(max: number, allowance: number, balance: number, pool = 0): string {
  const p = capParts(nano(max - pool), allowance, balance);
  const past = p.past > 0 ? ` + ${fmtExactMoney(p.past)} spent past the allowance this period` : "";
  const team = pool > 0 ? ` + ${fmtExactMoney(pool)} the team can still spend (its allowance left and its pool's balance)` : "";
  return `Max includes credits: ${fmtExactMoney(p.allowance)} allowance + ${fmtExactMoney(p.balance)} balance${past}${team}.`;
}

/**
 * The sentence under a team's period spend bar (team:total_spend) when the team plan draws its
 * pool: the max is the team plan's allowance, the pool's balance, and what this period's team
 * spend drew from the pool or members paid from their own allowances and credits (neither is
 * charged to the team's allowance).
 */
export function teamCapSentence(max: number, allowance: number, balance: number): string {
  const p = capParts(max, allowance, balance);
  const drawn = p.past > 0 ? `; ${fmtExactMoney(p.past)} drawn from the pool this period or paid by members' own allowances and credits` : "";
  return `Max includes the team's credits: ${fmtExactMoney(p.allowance)} team allowance + ${fmtExactMoney(nano(p.balance + p.past))} credits (pool balance ${fmtExactMoney(p.balance)}${drawn}).`;
}

type CapDimension = Pick<Dimension, "reason" | "max" | "used" | "credits">;

/**
 * The note under a dimension's bar saying what its max is made of, when credits extend it: a
 * user's own total_spend (its plan's allowance, its credits, and for a member whose team has a
 * pool what the team can still spend, the team:total_spend bar's max less its use), or
 * team:total_spend (the team plan's allowance and the pool). `allowance`: the plans' period caps.
 */
export function creditCapNote(d: CapDimension, dims: readonly CapDimension[], allowance: { own?: number | null; team?: number | null }): string | undefined {
  if (!d.credits || d.max == null) return undefined;
  if (d.reason === "team:total_spend") return teamCapSentence(d.max, allowance.team ?? 0, d.credits.balance);
  if (d.reason !== "total_spend") return undefined;
  const pool = dims.find((x) => x.reason === "team:total_spend" && x.credits && x.max != null);
  const headroom = pool ? Math.max(0, nano(pool.max! - pool.used)) : 0;
  return capSentence(d.max, allowance.own ?? 0, d.credits.balance, headroom);
}

/**
 * Whether an owner's plan draws its credits: "no plan"; false when credits_enabled is off;
 * "no cap" when the plan has no period cap (no allowance: nothing is ever drawn, docs/api.md); else true.
 */
export type Draws = boolean | "no plan" | "no cap";
export function drawsCredits(plan: { credits_enabled?: boolean; max_spend_per_period?: number | null } | null | undefined): Draws {
  if (!plan) return "no plan";
  if (!plan.credits_enabled) return false;
  return plan.max_spend_per_period == null ? "no cap" : true;
}
