/**
 * Prepaid credits (BUDGETS.md §3), the pure part: a grant's status, the balance, the draw order,
 * what a settle draws and what it announces. Money in whole nano-dollars; no I/O.
 */
import { HOUR_MS } from "@meter/lib/time";

export type GrantKind = "paid" | "promotional";
export type GrantStatus = "pending" | "active" | "depleted" | "expired" | "voided";
/** A grant that can no longer change (kept in the account until copied to `credit_grants`). */
export type FinalStatus = "depleted" | "expired" | "voided";
export type LedgerType = "grant" | "usage" | "expiry" | "void" | "overdraft";
export type NoticeType = "credits.low" | "credits.depleted" | "credits.expired";

/** The live state of one grant, as the account keeps it. */
export interface GrantState {
  id: string;
  amount_nano: number;
  remaining_nano: number;
  kind: GrantKind;
  priority: number;
  effective_at: Date;
  /** null: never expires. */
  expires_at: Date | null;
  created_at: Date;
  /** Set once the grant is final; the account drops it once `credit_grants` holds it. */
  final?: FinalStatus;
  final_at?: Date;
  /** What was left when it expired or was voided. */
  lost_nano?: number;
}

/** Most grants an owner holds that are not final (the 1,001st is refused). */
export const MAX_LIVE_GRANTS = 1000;

/** A grant's status at `now`: a grant past its expiry is expired even before the expiry job ran. */
export function statusAt(g: GrantState, now: number): GrantStatus {
  if (g.final) return g.final;
  if (g.expires_at !== null && g.expires_at.getTime() <= now) return "expired";
  if (g.remaining_nano <= 0) return "depleted";
  if (g.effective_at.getTime() > now) return "pending";
  return "active";
}

/** Draw order: priority, then expiry (never last), then effective date, then id. */
export function drawOrder(a: GrantState, b: GrantState): number {
  if (a.priority !== b.priority) return a.priority - b.priority;
  const ea = a.expires_at?.getTime() ?? Infinity;
  const eb = b.expires_at?.getTime() ?? Infinity;
  if (ea !== eb) return ea < eb ? -1 : 1;
  const fa = a.effective_at.getTime();
  const fb = b.effective_at.getTime();
  if (fa !== fb) return fa - fb;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * Balance and pending credits of an owner at `now` (the one computation every answer uses), with
 * an overdraft paid by the grants that became effective since it arose (latePayment; `since`:
 * when it arose, undefined while credits are disabled).
 */
export function balanceOf(grants: Iterable<GrantState>, overdraftNano: number, now: number, since?: number): { balance: number; pending: number } {
  const list = [...grants];
  const { taken, left } = latePayment(list, overdraftNano, since, now);
  let active = 0;
  let pending = 0;
  for (const g of list) {
    const s = statusAt(g, now);
    const remaining = g.remaining_nano - (taken.get(g.id) ?? 0);
    if (s === "active") active += remaining;
    else if (s === "pending") pending += remaining;
  }
  return { balance: active - left, pending };
}

/**
 * What pays an overdraft that grants effective since it arose (`since`, ms) did not pay yet: a
 * grant posted pending pays it once it takes effect (BUDGETS.md §3, "paid first by the next
 * grant"), though nothing is written then. Each such moment, the grants active then pay in draw
 * order, as a write at that moment would have; a grant that expired or was voided since paid
 * first all the same. Nothing without `since` (credits disabled, or an account from before it was
 * kept). Returns what each grant pays (by id) and the overdraft left.
 */
export function latePayment(grants: readonly GrantState[], overdraftNano: number, since: number | undefined, now: number): { taken: Map<string, number>; left: number } {
  const taken = new Map<string, number>();
  let left = overdraftNano;
  if (left <= 0 || since === undefined) return { taken, left };
  const live = grants.filter((g) => !g.final);
  // A grant pays from when it was both posted and in effect: one posted later with an earlier
  // effective_at takes over nothing another already paid.
  const moments = [...new Set(live.map((g) => Math.max(g.effective_at.getTime(), g.created_at.getTime(), since)))].filter((at) => at <= now).sort((a, b) => a - b);
  for (const at of moments) {
    if (left <= 0) break;
    const then = live.filter((g) => g.created_at.getTime() <= at).map((g) => ({ ...g, remaining_nano: g.remaining_nano - (taken.get(g.id) ?? 0) }));
    const d = draw(then, left, at);
    for (const [id, n] of d.taken) taken.set(id, (taken.get(id) ?? 0) + n);
    left = d.uncovered;
  }
  return { taken, left };
}

/**
 * Takes `amount` from the active grants in draw order. Returns what each grant gives (by id)
 * and what no grant covers (which becomes overdraft).
 */
export function draw(grants: Iterable<GrantState>, amount: number, now: number): { taken: Map<string, number>; uncovered: number } {
  const taken = new Map<string, number>();
  let left = amount;
  const usable = [...grants].filter((g) => statusAt(g, now) === "active").sort(drawOrder);
  for (const g of usable) {
    if (left <= 0) break;
    const t = Math.min(left, g.remaining_nano);
    if (t > 0) {
      taken.set(g.id, t);
      left -= t;
    }
  }
  return { taken, uncovered: Math.max(0, left) };
}

/**
 * What the spend of one billing period needs from credits: what goes beyond the allowance, less
 * what of it was spent while the plan drew no credits (`uncreditedNano`, the spend of events whose
 * plan in force had credits disabled: BUDGETS.md §3, grants are never drawn then). That spend
 * used the allowance first, as it came first: a user who spent $5 on a free plan and moves to a
 * prepaid plan with no allowance in the same period pays the prepaid usage alone from credits.
 */
export function needed(spendNano: number, allowanceNano: number, uncreditedNano = 0): number {
  return Math.max(0, Math.max(0, spendNano - allowanceNano) - forgiven(uncreditedNano, allowanceNano));
}

/** What of a period's spend went beyond the allowance while credits were off: never drawn, so it lifts the cap as much. */
export function forgiven(uncreditedNano: number, allowanceNano: number): number {
  return Math.max(0, uncreditedNano - allowanceNano);
}

/**
 * The webhooks a balance change announces: `credits.low` when it goes from >= low_at to below
 * it while armed (then disarmed), re-armed once it is >= low_at again; `credits.depleted` when it
 * goes from > 0 to <= 0.
 */
export function balanceNotices(
  before: number,
  after: number,
  lowAtNano: number | null,
  armed: boolean,
): { notices: NoticeType[]; armed: boolean } {
  const notices: NoticeType[] = [];
  let nextArmed = armed;
  if (lowAtNano !== null) {
    if (armed && before >= lowAtNano && after < lowAtNano) {
      notices.push("credits.low");
      nextArmed = false;
    } else if (after >= lowAtNano) nextArmed = true;
  }
  if (before > 0 && after <= 0) notices.push("credits.depleted");
  return { notices, armed: nextArmed };
}

/** Start of the UTC hour of `t` (ms): usage is summed per grant and hour in the ledger. */
export function hourOf(t: number): number {
  return t - (t % HOUR_MS);
}
