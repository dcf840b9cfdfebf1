/**
 * Merging a session view into local state, and billing-period rollover (pure, over the fields of
 * a user's state it names: UserEntry in state.ts has them).
 *
 * - Another service_user_id than before (user deleted and re-created): everything local is reset.
 * - Other period dates than local (a new period, or a plan change with fresh dates): local
 *   counters are zeroed and the service's values taken.
 * - Same dates (a refresh, or a plan change that keeps the period): each counter keeps the
 *   larger of local and service values: local holds events not delivered yet, the service
 *   holds spend of other processes.
 * - Windows (the plan's `limits`): one counter per limit, kept across views by what it counts
 *   (a renamed limit keeps its usage); each takes, per window (same start) or per rolling
 *   bucket (same start), the larger of local and service values.
 * - Credits (credits.ts): the view's period cap with the balance becomes the user's
 *   `max_spend_per_period`, which every gate and lease reads; the local balance is what it
 *   leaves after the merged spend, so the lower of local and service balances wins.
 * - A team (`team`, BUDGETS.md section 4): the team's block is merged into the team's entry
 *   shared by its members (team-state.ts); the view's scope-`member` team limits into the
 *   member's own counters of them (UserEntry.syncTeam). A member without a plan of its own is
 *   priced at the team plan's rates, with no caps of its own.
 */
import type { PlanConfig, PlanConfigView, SessionView } from "./types.ts";
import { readCredits, type UserCredits } from "./credits.ts";
import { byName } from "./own.ts";
import { dimensionKey, mergeView, newCounter, rollOn, sessionWindowMs, type LimitCounter } from "./rules/index.ts";

export type Merge = "first" | "reset" | "fresh_period" | "same_period";

/** A billing period's sums, as a user and a team keep them. */
export interface PeriodState {
  periodStart: string;
  periodEnd: string;
  periodEndMs: number;
  periodCost: number;
  tokensByModel: Record<string, number>;
  costByModel: Record<string, number>;
}

/** The part of a user's local state a session view and a rollover write. */
export interface ViewedState extends PeriodState {
  loaded: boolean;
  unknown: boolean;
  serviceUserId: string | null;
  plan: string;
  planId: string | null;
  /** With credits, the plan with the period cap including the balance (credits.cap). */
  config: PlanConfig | null;
  /** The plan whose keys model names are normalized over: `config`, or the team plan for a member priced at it. */
  naming: PlanConfig | null;
  credits: UserCredits | null;
  timeoutMs: number;
  counters: LimitCounter[];
  readonly models: { clear(): void };
  readonly sessions: { clear(now: number): void };
  /** Tokens by model name of the usage recorded before the first view, held back until it is in. */
  heldTokens(): Iterable<[string, number]>;
}

export function applyView(e: ViewedState, view: SessionView, now: number): Merge {
  const u = view.current_usage;
  // The service still names a period this client rolled past (SPEC: a period that ended with no new
  // dates from the service is cleared locally): the local period and what it counted stand.
  const behind = e.loaded && Date.parse(view.billing_period.end) <= Date.parse(e.periodStart);
  let merge: Merge;
  if (!e.loaded) merge = "first";
  else if (e.serviceUserId !== null && e.serviceUserId !== view.service_user_id) merge = "reset";
  else if (!behind && (e.periodStart !== view.billing_period.start || e.periodEnd !== view.billing_period.end)) merge = "fresh_period";
  else merge = "same_period";

  if (merge === "reset") e.sessions.clear(now);
  // "first": anything recorded before the first answer belongs to the period the service reports. It is
  // held back (priced, then sent, once this view is in), so the service's figures hold none of its tokens.
  const held = merge === "first" ? [...e.heldTokens()] : [];
  for (const [model, n] of held) addTokens(e.tokensByModel, model, -n);
  if (!behind) mergeUsage(e, u, merge === "same_period" || merge === "first");
  for (const [model, n] of held) addTokens(e.tokensByModel, model, n);
  e.serviceUserId = view.service_user_id;
  e.plan = view.plan;
  e.planId = view.plan_id ?? null;
  const before = e.config;
  const team = view.team ?? null;
  // A member with no plan of its own (in a subscribed team): priced at the team plan's rates, no caps of its own.
  const teamPriced = view.sdk_enabled && team !== null && (view.plan_id ?? null) === null;
  const plan = !view.sdk_enabled ? null : teamPriced ? pricedBy(readPlan(team.plan_config)) : readPlan(view.plan_config);
  e.naming = teamPriced ? readPlan(team.plan_config) : plan;
  e.credits = readCredits(plan, view, e.periodCost, merge === "reset" ? null : e.credits, now);
  e.config = e.credits === null ? plan : withCap(plan!, e.credits.cap, e.credits.allowance);
  e.timeoutMs = sessionWindowMs(view.plan_config.session_timeout_minutes);
  if (!behind) {
    e.periodStart = view.billing_period.start;
    e.periodEnd = view.billing_period.end;
    e.periodEndMs = Date.parse(view.billing_period.end);
  }
  e.models.clear();
  e.loaded = true;
  e.unknown = false;
  applyWindows(e, before, view, now, merge === "reset");
  return merge;
}

/**
 * The plan's windows after a view: counters of limits that count the same thing as before
 * (keepCounters), then the service's figure of each limit is merged in (rules/counters.ts mergeView).
 */
function applyWindows(e: ViewedState, before: PlanConfig | null, view: SessionView, now: number, reset: boolean): void {
  const plan = e.config;
  if (plan === null || plan.limits.length === 0) {
    e.counters = [];
    return;
  }
  const period = { start: Date.parse(e.periodStart), end: e.periodEndMs };
  if (reset || before !== plan) e.counters = keepCounters(reset ? null : before, e.counters, plan, now, period);
  const seen = view.limits;
  if (seen === undefined) return;
  for (const v of seen) {
    if (!v.reason.startsWith("limit:")) continue;
    const i = plan.limits.findIndex((l) => l.name === v.name);
    if (i >= 0) mergeView(plan.limits[i]!, e.counters[i]!, v, now, plan.time_zone, period);
  }
}

/**
 * One counter per limit of `plan`: those of `before` (with `counters`, one per limit of it) that
 * count the same thing (same metric, window, duration and model, same time zone) are kept (a
 * renamed limit keeps its usage); others start empty. The same plan keeps its counters.
 */
export function keepCounters(before: PlanConfig | null, counters: readonly LimitCounter[], plan: PlanConfig, now: number, period: { start: number; end: number }): LimitCounter[] {
  if (before === plan && counters.length === plan.limits.length) return counters as LimitCounter[];
  const kept = new Map<string, LimitCounter>();
  if (before !== null && before.time_zone === plan.time_zone) {
    before.limits.forEach((l, i) => {
      const c = counters[i];
      if (c !== undefined) kept.set(dimensionKey(l), c);
    });
  }
  return plan.limits.map((l) => {
    const key = dimensionKey(l);
    const c = kept.get(key);
    kept.delete(key); // two equal limits: the second starts from the service's figure
    return c ?? newCounter(l, now, plan.time_zone, period);
  });
}

/** A view's period sums merged in: the larger of local and service figures (`same` period), else the service's. */
export function mergeUsage(e: PeriodState, u: SessionView["current_usage"], same: boolean): void {
  if (same) {
    e.periodCost = Math.max(e.periodCost, u.period_cost);
    e.tokensByModel = maxOf(e.tokensByModel, u.period_tokens_by_model);
    e.costByModel = maxOf(e.costByModel, u.period_cost_by_model);
  } else {
    e.periodCost = u.period_cost;
    e.tokensByModel = byName(u.period_tokens_by_model);
    e.costByModel = byName(u.period_cost_by_model);
  }
}

/**
 * The period ended and the service gave no new one (unreachable): counters are cleared
 * locally and the next period is taken to be as long as the last, until the service answers.
 */
export function rollLocally(e: ViewedState, now: number): void {
  if (e.credits !== null) {
    e.credits.rolled(e.periodCost);
    e.config = withCap(e.config!, e.credits.cap, e.credits.allowance);
  }
  rollUsage(e, now);
}

/** A period's sums cleared, the next period as long as the last. */
export function rollUsage(e: PeriodState, now: number): void {
  const { start, end } = rollOn(Date.parse(e.periodStart), e.periodEndMs, now);
  e.periodStart = new Date(start).toISOString();
  e.periodEnd = new Date(end).toISOString();
  e.periodEndMs = end;
  e.periodCost = 0;
  e.tokensByModel = byName();
  e.costByModel = byName();
}

function addTokens(byModel: Record<string, number>, model: string, n: number): void {
  const sum = (Object.hasOwn(byModel, model) ? byModel[model]! : 0) + n;
  if (sum > 0) byModel[model] = sum;
  else delete byModel[model];
}

function maxOf(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const out = byName(a);
  for (const [k, v] of Object.entries(b)) out[k] = Math.max(out[k] ?? 0, v);
  return out;
}

/**
 * The plan with another period spend cap: the one with the credits, over `allowance` (shared by
 * users with the same one); prepaid when the allowance is 0 (rules/dimensions.ts WindowPlan).
 */
export function withCap(plan: PlanConfig, cap: number, allowance: number): PlanConfig {
  const prepaid = allowance === 0;
  return plan.max_spend_per_period === cap && (plan.prepaid === true) === prepaid ? plan : intern({ ...plan, max_spend_per_period: cap, prepaid });
}

/** An omitted cap and a null one both mean unlimited. */
export function readPlanConfig(view: PlanConfigView): PlanConfig {
  return {
    ...view,
    credits_enabled: view.credits_enabled ?? false,
    credits_low_at: view.credits_low_at ?? null,
    max_spend_per_period: view.max_spend_per_period ?? null,
    max_spend_per_session: view.max_spend_per_session ?? null,
    default_cost_rate: view.default_cost_rate ?? null,
    limits: view.limits ?? [],
    time_zone: view.time_zone ?? "UTC",
  };
}

/** A plan as the view sends it, read (readPlanConfig) and shared by every user and team on it. */
export function readPlan(view: PlanConfigView): PlanConfig {
  return intern(readPlanConfig(view));
}

/** A team plan's prices without its caps: what a member with no plan of its own is priced at. */
function pricedBy(team: PlanConfig): PlanConfig {
  return intern({ ...team, max_spend_per_period: null, max_spend_per_session: null, model_limits: {}, limits: [], credits_enabled: false, credits_low_at: null });
}

/** Users on one plan share one config object (bounded; cleared when full). */
const configs = new Map<string, PlanConfig>();
const MAX_CONFIGS = 1_000;

function intern(config: PlanConfig): PlanConfig {
  const key = JSON.stringify(config);
  let c = configs.get(key);
  if (!c) {
    if (configs.size >= MAX_CONFIGS) configs.clear();
    c = config;
    configs.set(key, c);
  }
  return c;
}
