/**
 * What the library holds for one team (BUDGETS.md section 4): the team plan, the team's period
 * sums and its scope-`team` windows, and what its members' calls in flight hold. One per team
 * id in the process, shared by every member the process serves: a member's call counts here at
 * once, so the next member's check sees it. Members' session views carry the team's block;
 * each is merged in as a user's view is (session-view.ts): the larger of local and service
 * figures in the same period, the service's on a new period, an older period's view ignored
 * (members' views arrive in any order).
 */
import { own, byName } from "./own.ts";
import { keepCounters, mergeUsage, readPlan, rollUsage, withCap, type PeriodState } from "./session-view.ts";
import { addDollars, advance, blockedByCredits, countIn, hardMarkOf, memberScoped, mergeView, unitOf, type LimitCounter, type PlanLimit } from "./rules/index.ts";
import type { LimitStatus, PlanConfig, TeamState, TeamView } from "./types.ts";

const NO_COUNTERS: LimitCounter[] = [];

export class TeamEntry implements PeriodState {
  serviceTeamId: string | null = null;
  plan = "none";
  planId: string | null = null;
  /** The team plan (null until a view named the team with a subscription in force). */
  config: PlanConfig | null = null;
  periodStart = "";
  periodEnd = "";
  periodEndMs = -Infinity;
  periodCost = 0;
  tokensByModel: Record<string, number> = byName();
  costByModel: Record<string, number> = byName();
  /** One per entry of `config.limits`: the team's counter of a scope-`team` limit (scope-`member` ones are the members'). */
  counters: LimitCounter[] = NO_COUNTERS;
  /** The team's shared pool (the team plan with credits): the allowance, and the plan's low mark; null without. */
  pool: { allowance: number; lowAt: number | null } | null = null;
  /** What the members' calls in flight hold (dollars; tokens per model). */
  reservedCost = 0;
  reservedTokens: Record<string, number> = byName();

  constructor(readonly teamId: string) {}

  /**
   * A member's view named this team. Returns false when the view is of an older period than
   * the one held (a member's stale view after another's of the new period): nothing is taken.
   */
  apply(view: TeamView, limits: readonly LimitStatus[] | undefined, now: number): boolean {
    const start = Date.parse(view.billing_period.start);
    const reset = this.serviceTeamId !== null && this.serviceTeamId !== view.service_team_id;
    const held = this.config === null ? -Infinity : Date.parse(this.periodStart);
    if (!reset && start < held) return false;
    const samePeriod = !reset && this.config !== null && this.periodStart === view.billing_period.start && this.periodEnd === view.billing_period.end;
    mergeUsage(this, view.current_usage, samePeriod);
    this.periodStart = view.billing_period.start;
    this.periodEnd = view.billing_period.end;
    this.periodEndMs = Date.parse(view.billing_period.end);
    this.serviceTeamId = view.service_team_id;
    this.plan = view.plan;
    this.planId = view.plan_id ?? null;
    const before = this.config;
    // The same plan as before is the same object (interned): members compare it to know their counters still fit.
    const plan = readPlan(view.plan_config);
    this.config = teamCap(plan, limits);
    this.pool = this.config === plan ? null : { allowance: plan.max_spend_per_period!, lowAt: plan.credits_low_at ?? null };
    const period = this.period();
    this.counters = keepCounters(reset ? null : before, this.counters, this.config, now, period);
    for (const v of limits ?? []) {
      const i = teamLimitOf(this.config, v);
      if (i >= 0 && !memberScoped(this.config.limits[i]!)) mergeView(this.config.limits[i]!, this.counters[i]!, v, now, this.config.time_zone, period);
    }
    return true;
  }

  /**
   * What a block of `team:total_spend` names of the team's pool when the pool is what ran out
   * (spend past the team allowance), as a user's credits (rules/credits.ts): the balance the cap
   * leaves after the team's spend.
   */
  poolBlock(gateReason: string | null, status: string, currentValue: number): { balance: number; lowAt: number | null } | null {
    const pool = this.pool;
    if (pool === null || this.config === null || !blockedByCredits(gateReason === "team:total_spend" ? "total_spend" : null, status, currentValue, pool.allowance)) return null;
    return { balance: addDollars(this.config.max_spend_per_period!, -this.periodCost), lowAt: pool.lowAt };
  }

  /** The period ended and no view gave a new one: the sums are cleared and the next period is taken to be as long as the last. */
  rollOver(now: number): void {
    rollUsage(this, now);
  }

  period(): { start: number; end: number } {
    return { start: Date.parse(this.periodStart), end: this.periodEndMs };
  }

  /** The scope-`team` windows brought to `now` (see UserEntry.advanceWindows). */
  advanceWindows(now: number): void {
    const plan = this.config;
    if (plan === null || plan.limits.length === 0) return;
    advanceAll(plan, this.counters, now, this, false);
  }

  /** A member's call at `at`: counted in the team's period sums and its scope-`team` windows. */
  count(model: string | null, tokens: number, cost: number, at: number, now: number): void {
    if (this.config === null) return;
    this.periodCost = addDollars(this.periodCost, cost);
    if (model !== null) {
      this.tokensByModel[model] = (own(this.tokensByModel, model) ?? 0) + tokens;
      this.costByModel[model] = addDollars(own(this.costByModel, model) ?? 0, cost);
    }
    const plan = this.config;
    if (plan.limits.length === 0) return;
    this.advanceWindows(now);
    countAll(plan.limits, this.counters, false, model, tokens, cost, at, now);
  }

  /** A member's reserved call holds (sign 1) or gives back (-1) its estimate on the team's sums. */
  hold(model: string | null, cost: number, tokens: number, sign: 1 | -1): void {
    this.reservedCost = Math.max(0, addDollars(this.reservedCost, sign * cost));
    if (model !== null && tokens > 0) this.reservedTokens[model] = Math.max(0, (own(this.reservedTokens, model) ?? 0) + sign * tokens);
  }

  snapshot(): TeamState {
    return {
      team_id: this.teamId,
      service_team_id: this.serviceTeamId,
      plan: this.plan,
      billing_period: { start: this.periodStart, end: this.periodEnd },
      period_cost: this.periodCost,
      period_tokens_by_model: { ...this.tokensByModel },
      period_cost_by_model: { ...this.costByModel },
    };
  }
}

/**
 * The team plan with the team's pool counted into its period cap (BUDGETS.md §4): with credits,
 * `team:total_spend` carries them and its max is the allowance, what the pool drew and its
 * balance, as a user's `total_spend`; locally the pool is what that cap leaves after the team's spend.
 */
function teamCap(plan: PlanConfig, limits: readonly LimitStatus[] | undefined): PlanConfig {
  const total = limits?.find((d) => d.reason === "team:total_spend");
  return plan.credits_enabled && total?.credits != null && plan.max_spend_per_period !== null ? withCap(plan, total.max, plan.max_spend_per_period) : plan;
}

/** The teams of the members this process serves: one entry per team id. */
export class Teams {
  readonly #entries = new Map<string, TeamEntry>();

  get size(): number {
    return this.#entries.size;
  }

  /** The team's entry, made on its first member's view. */
  of(teamId: string): TeamEntry {
    let t = this.#entries.get(teamId);
    if (t === undefined) {
      t = new TeamEntry(teamId);
      this.#entries.set(teamId, t);
    }
    return t;
  }

  get(teamId: string): TeamEntry | undefined {
    return this.#entries.get(teamId);
  }

  /** Drops the teams none of `members` belongs to any more. */
  sweep(members: Iterable<{ team: TeamEntry | null }>): void {
    const live = new Set<TeamEntry>();
    for (const m of members) if (m.team !== null) live.add(m.team);
    for (const [id, t] of this.#entries) if (!live.has(t)) this.#entries.delete(id);
  }
}

/** The index of the team plan limit a view's `team:limit:<name>` entry is about, else -1. */
export function teamLimitOf(plan: PlanConfig, v: LimitStatus): number {
  if (!v.reason.startsWith("team:limit:")) return -1;
  const name = v.name ?? v.reason.slice("team:limit:".length);
  return plan.limits.findIndex((l) => l.name === name);
}

/**
 * The windows of a plan's limits brought to `now`, each touched only past its next expiry (so a
 * guard between them only compares two numbers per window). `member`: of a team plan, only the
 * scope-member limits (true) or the others (false); null: every limit (a user's own plan).
 */
export function advanceAll(plan: PlanConfig, counters: readonly LimitCounter[], now: number, of: { period(): { start: number; end: number } }, member: boolean | null): void {
  const limits = plan.limits;
  for (let i = 0; i < limits.length; i++) {
    const l = limits[i]!;
    if (member !== null && memberScoped(l) !== member) continue;
    const c = counters[i]!;
    if (l.window === "rolling" ? now < c.validUntil : now < c.end) continue;
    // The period is read only for a counter that rolls (a date parsed: not on every check).
    advance(l, c, now, plan.time_zone, of.period(), hardMarkOf(l, plan.hard_gate_at));
  }
}

/** A call counted in the windows of `limits` (of one scope, as advanceAll) whose model matches: one request, its tokens, its cost. */
export function countAll(limits: readonly PlanLimit[], counters: readonly LimitCounter[], member: boolean | null, model: string | null, tokens: number, cost: number, at: number, now: number): void {
  for (let i = 0; i < limits.length; i++) {
    const l = limits[i]!;
    if ((member !== null && memberScoped(l) !== member) || (l.model != null && l.model !== model)) continue;
    countIn(l, counters[i]!, at, l.metric === "spend" ? unitOf("spend", cost) : l.metric === "tokens" ? tokens : 1, now);
  }
}
