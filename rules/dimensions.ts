import { memberScoped, resetsOf, usedOf, type LimitCounter, type PlanLimit } from "./counters.ts";
import { ratio, toDollars, toNano } from "./money.ts";
import type { Metric, WindowKind } from "./windows.ts";

/**
 * Evaluation of a list of dimensions (BUDGETS.md §1): every dimension a call is counted
 * against (SPEC's three and a plan's `limits`) against its soft and hard marks. The call is
 * blocked when any dimension is at its hard gate; several at once: the one that allows a call
 * again last names the block (latest `resets_at`, null = never = latest; ties: the higher
 * usage, then list order). No hard gate: the soft one with the highest usage (as gates.ts
 * always did). A list of SPEC's three alone gives what gates.ts gave. A member of a team
 * (BUDGETS.md section 4) is checked against the team plan's dimensions too, in the same list:
 * reasons prefixed `team:`, the team's sums (scope `team`) or the member's own (scope `member`).
 */

/** The settings a gate reads, as the API names them (null caps: unlimited). */
export interface GatePlan {
  max_spend_per_period: number | null;
  max_spend_per_session: number | null;
  soft_gate_at: number;
  hard_gate_at: number;
  model_limits: Readonly<Record<string, { max_tokens_per_period: number }>>;
}

/** What a guard checks: usage so far (committed plus reserved) and the estimate of the coming call. */
export interface GateInput {
  periodCost: number;
  sessionCost: number;
  /** Normalized model of the call, or null. */
  model: string | null;
  /** Tokens of that model this period. */
  modelTokens: number;
  /** Estimated cost and tokens of the coming call (0 without pre_call_estimate). */
  estimateCost: number;
  estimateTokens: number;
}

/** One bucket of a rolling window in a session view: its start and what it counted. */
export interface LimitBucket {
  start: string;
  /** Dollars for spend, else tokens or requests. */
  used: number;
}

/**
 * One dimension of a user as the service reports it (session view `limits`, and
 * GET /users/{user_id}/limits): SPEC's caps and each entry of the plan's `limits`.
 */
export interface LimitStatus {
  /** `total_spend`, `session_spend`, `model_limit:<model>` or `limit:<name>`; the team plan's prefixed `team:`. */
  reason: string;
  /** The plan limit's name; null for SPEC's caps. */
  name: string | null;
  metric: Metric;
  window: WindowKind | "session";
  duration_minutes: number | null;
  model: string | null;
  /** `user` for the user's own; a team's: `team` (the team's sum) or `member` (this member's under the team plan). */
  scope: string;
  max: number;
  used: number;
  pct: number;
  soft_gate_at: number;
  hard_gate_at: number;
  /** Start of the window counted; null for rolling windows and the session. */
  window_start: string | null;
  /** When it lifts by itself; null: never (max 0), nothing counted in a rolling window, or the session. */
  resets_at: string | null;
  /** Rolling windows: the buckets that still count. */
  buckets?: LimitBucket[] | null;
  /** `total_spend` with credits enabled (its max then includes the balance): the balance and the plan's low mark. */
  credits?: { balance: number; low_at: number | null } | null;
}

/** One dimension before a call. Amounts in dollars for spend, else tokens or requests. */
export interface Dimension {
  /** `total_spend`, `session_spend`, `model_limit:<model>` or `limit:<name>`; a team plan's prefixed `team:`. */
  reason: string;
  metric: Metric;
  /** A team plan's `limits` entry counted for each member apart (the message says so); else unset or `team`. */
  scope?: "team" | "member" | null;
  /** The window counted (`session` for the session cap): read by the message only. */
  window: WindowKind | "session";
  /** Rolling windows: their length (the message says "in the last N minutes"). */
  duration_minutes?: number | null;
  max: number;
  /** Counted so far in the window plus what calls in flight hold. */
  used: number;
  /**
   * What this call adds as a projection: its estimate with pre_call_estimate (0 without),
   * and for `requests` always 1 (the call itself).
   */
  estimate: number;
  soft_gate_at: number;
  hard_gate_at: number;
  /** When the dimension lets a call through again by itself (epoch ms), null: never or unknown. */
  resets_at: number | null;
}

export interface DimensionResult {
  status: "ok" | "soft_gate" | "hard_gate";
  /** The deciding dimension's reason; null when ok. */
  gate_reason: string | null;
  usage_pct: number;
  current_value: number;
  limit_value: number;
  message: string | null;
  /** The deciding dimension's `resets_at` (ISO 8601), null when ok or never. */
  resets_at: string | null;
}

const OK = 0;
const SOFT = 1;
const HARD = 2;
const STATUS = ["ok", "soft_gate", "hard_gate"] as const;
const EPSILON = 1e-9;

// The deciding dimension so far, in module variables so that an evaluation allocates only its result.
let worstRank = OK;
let worstPct = 0;
let worstIndex = -1;
let worstReset = 0;
let worstUsed = 0;
let worstEstimate = 0;
let worstValue = 0;
let worstLimit = 0;

/** A gate mark in the dimension's unit (`max` in it): money rounded to the nano-dollar, so that a sum lands on it exactly. */
function markOf(money: boolean, at: number, max: number): number {
  return money ? Math.round(at * max) : at * max;
}

/**
 * Where a dimension's usage stands, no call in view, as the gates decide it (money in whole
 * nano-dollars, a max of 0 always "hard"): for what a screen shows of a dimension. Its rounded
 * `pct` is not enough: $9.9999996 of a $10 cap reads pct 1 and is below the hard mark.
 */
export function gateState(d: { metric: Metric; used: number; max: number; soft_gate_at: number; hard_gate_at: number }): "ok" | "soft" | "hard" {
  const money = d.metric === "spend";
  const u = money ? toNano(d.used) : d.used;
  const l = money ? toNano(d.max) : d.max;
  const tol = money ? 0 : l * EPSILON;
  if (l <= 0 || u >= markOf(money, d.hard_gate_at, l) - tol) return "hard";
  return u >= markOf(money, d.soft_gate_at, l) - tol ? "soft" : "ok";
}

/**
 * One dimension's rank. Reaching the hard mark blocks; with an estimate, so does a call whose
 * estimate would take usage past it (a call that would land exactly on the cap runs). A max of
 * 0 blocks everything. Money is compared in whole nano-dollars (money.ts), so a sum lands
 * exactly on a mark; usage_pct is the ratio rounded to 1e-6.
 */
function rank(d: Dimension, i: number): void {
  const money = d.metric === "spend";
  const u = money ? toNano(d.used) : d.used;
  const e = money ? toNano(d.estimate) : d.estimate;
  const l = money ? toNano(d.max) : d.max;
  const projected = u + e;
  const pct = l > 0 ? ratio(projected, l) : 1;
  // Counts: a relative tolerance for marks that are not whole (0.8 x 1001); money marks are
  // rounded to the unit and compared exactly.
  const tol = money ? 0 : l * EPSILON;
  const hardMark = markOf(money, d.hard_gate_at, l);
  const softMark = markOf(money, d.soft_gate_at, l);
  let r = OK;
  if (l <= 0 || u >= hardMark - tol || (e > 0 && projected > hardMark + tol)) r = HARD;
  else if (projected >= softMark - tol) r = SOFT;
  const reset = d.resets_at ?? Infinity;
  let take = r > worstRank || worstIndex < 0;
  if (!take && r === worstRank) take = r === HARD && reset !== worstReset ? reset > worstReset : pct > worstPct;
  if (take) {
    worstRank = r;
    worstPct = pct;
    worstIndex = i;
    worstReset = reset;
    worstUsed = money ? toDollars(u) : u;
    worstEstimate = money ? toDollars(e) : e;
    worstValue = money ? toDollars(projected) : projected;
    worstLimit = money ? toDollars(l) : l;
  }
}

/** Every dimension of `dims` (in order); the deciding one named in the result. */
export function evaluateDimensions(dims: readonly Dimension[]): DimensionResult {
  return evaluateFirst(dims, dims.length);
}

/** The first `n` of `dims`: evaluatePlan reuses one array without resizing it. */
function evaluateFirst(dims: readonly Dimension[], n: number): DimensionResult {
  worstRank = OK;
  worstPct = 0;
  worstIndex = -1;
  worstReset = 0;
  worstUsed = 0;
  worstEstimate = 0;
  worstValue = 0;
  worstLimit = 0;
  for (let i = 0; i < n; i++) rank(dims[i]!, i);
  if (worstRank === OK) {
    return { status: "ok", gate_reason: null, usage_pct: worstPct, current_value: worstValue, limit_value: worstLimit, message: null, resets_at: null };
  }
  const d = dims[worstIndex]!;
  return {
    status: STATUS[worstRank]!,
    gate_reason: d.reason,
    usage_pct: worstPct,
    current_value: worstValue,
    limit_value: worstLimit,
    message: describe(worstRank, d, worstUsed, worstEstimate, worstLimit),
    resets_at: worstReset === Infinity ? null : new Date(worstReset).toISOString(),
  };
}

const WINDOW_WORDS: Record<string, string> = {
  minute: "this minute",
  hour: "this hour",
  day: "today",
  week: "this week",
  month: "this month",
  period: "this period",
  session: "this session",
};

/**
 * What was used (settled calls plus what calls in flight hold) and, apart, what this call would
 * add: the projection is not usage, and must not read as such. SPEC's three keep their
 * messages word for word; a team plan's dimensions say "Team" (or "member limit ... of the
 * team" for one counted per member).
 */
function describe(r: number, d: Dimension, used: number, estimate: number, limit: number): string {
  const team = d.reason.startsWith(TEAM);
  const reason = team ? d.reason.slice(TEAM.length) : d.reason;
  const what = r === HARD ? "limit reached" : "approaching the limit";
  const pct = (x: number) => `${limit > 0 ? Math.round((x / limit) * 100) : 100}%`;
  const money = (x: number) => `$${x.toFixed(4)}`;
  const moneyAfter = (x: number) => `; this call's estimate of ${money(x)} would bring it to ${money(toDollars(toNano(used) + toNano(x)))} (${pct(used + x)})`;
  if (reason === "total_spend" || reason === "session_spend") {
    const head = `${team ? "Team spend" : reason === "total_spend" ? "Spend" : "Session spend"} ${what}: ${money(used)} of $${limit.toFixed(2)} spent (${pct(used)})`;
    return estimate > 0 ? head + moneyAfter(estimate) : head;
  }
  if (reason.startsWith("model_limit:")) {
    const head = `${team ? "Team token" : "Token"} ${what} for ${reason.slice("model_limit:".length)} this period: ${used} of ${limit} tokens used (${pct(used)})`;
    return estimate > 0 ? `${head}; this call's estimate of ${estimate} tokens would bring it to ${used + estimate} (${pct(used + estimate)})` : head;
  }
  const name = reason.startsWith("limit:") ? `"${reason.slice("limit:".length)}"` : reason;
  const label = !team ? `limit ${name}` : d.scope === "member" ? `member limit ${name} of the team` : `team limit ${name}`;
  const when = d.window === "rolling" ? `in the last ${d.duration_minutes ?? 0} minutes` : (WINDOW_WORDS[d.window] ?? `this ${d.window}`);
  const head = r === HARD ? `${label[0]!.toUpperCase()}${label.slice(1)} reached` : `Approaching ${label}`;
  if (d.metric === "spend") {
    const line = `${head}: ${money(used)} of $${limit.toFixed(2)} spent ${when} (${pct(used)})`;
    return estimate > 0 ? line + moneyAfter(estimate) : line;
  }
  if (d.metric === "tokens") {
    const line = `${head}: ${used} of ${limit} tokens used ${when} (${pct(used)})`;
    return estimate > 0 ? `${line}; this call's estimate of ${estimate} tokens would bring it to ${used + estimate} (${pct(used + estimate)})` : line;
  }
  return `${head}: ${used} of ${limit} requests made ${when} (${pct(used)}); this call would make it ${used + estimate}`;
}

/** A plan's settings that gates read, with its windows (BUDGETS.md §2). */
export interface WindowPlan extends GatePlan {
  /** IANA name; calendar windows reset at midnight there. Default `UTC`. */
  time_zone?: string;
  limits?: readonly PlanLimit[];
  /**
   * The period cap is prepaid credits with no allowance (`max_spend_per_period` then counts what
   * the period drew and the balance, BUDGETS.md §3): a new period lifts nothing, only a grant
   * does, so `total_spend` has no `resets_at`.
   */
  prepaid?: boolean;
}

/** What a guard checks with windows: GateInput, when SPEC's caps reset, and one counter per plan limit. */
export interface WindowInput extends GateInput {
  /** End of the billing period (epoch ms): when `total_spend` and model limits reset; null unknown. */
  periodEnd: number | null;
  /** When the session cap resets (the library's own session's end); null unknown (a caller's session). */
  sessionEnd: number | null;
  /** One per entry of the plan's `limits`, in plan order, advanced to now (counters.ts `advance`). */
  counters: readonly LimitCounter[];
}

/**
 * A team member's call: the team plan and the team's figures (BUDGETS.md section 4). The team
 * plan's period and model caps and its scope-`team` limits read the team's sums; its
 * scope-`member` limits read what this member counted under the team plan. The call's estimate
 * is the member's (WindowInput). The team plan's session cap is not applied: sessions are a user's.
 */
export interface TeamWindowInput {
  plan: WindowPlan;
  /** The team's period spend (every member's, with what calls in flight hold). */
  periodCost: number;
  /** The team's tokens of the call's model this period (with holds). */
  modelTokens: number;
  /** End of the team's billing period (epoch ms); null unknown. */
  periodEnd: number | null;
  /** One per entry of the team plan's `limits`, advanced to now: the team's counter for scope `team` (others unread). */
  counters: readonly LimitCounter[];
  /** One per entry of the team plan's `limits`: this member's counter for scope `member` (others unread). */
  memberCounters: readonly LimitCounter[];
}

/** The prefix of a team plan's dimensions. */
export const TEAM = "team:";

/** Reusable dimensions of one plan's caps and limits (the user's, or the team's): an evaluation allocates only its result. */
class PlanDims {
  readonly total: Dimension;
  readonly session: Dimension;
  readonly model: Dimension = { reason: "", metric: "tokens", window: "period", duration_minutes: null, max: 0, used: 0, estimate: 0, soft_gate_at: 0, hard_gate_at: 0, resets_at: null, scope: null };
  /** The model `model`'s reason names (a string built once per model in a row). */
  modelOf: string | null = null;
  readonly limits: Dimension[] = [];
  /** Reason per limit name, built once. */
  readonly reasons = new Map<string, string>();

  constructor(readonly prefix: string) {
    this.total = { reason: `${prefix}total_spend`, metric: "spend", window: "period", duration_minutes: null, max: 0, used: 0, estimate: 0, soft_gate_at: 0, hard_gate_at: 0, resets_at: null, scope: null };
    this.session = { reason: `${prefix}session_spend`, metric: "spend", window: "session", duration_minutes: null, max: 0, used: 0, estimate: 0, soft_gate_at: 0, hard_gate_at: 0, resets_at: null, scope: null };
  }

  limitReason(name: string): string {
    let r = this.reasons.get(name);
    if (r === undefined) {
      if (this.reasons.size >= 10_000) this.reasons.clear();
      r = `${this.prefix}limit:${name}`;
      this.reasons.set(name, r);
    }
    return r;
  }

  modelDim(model: string): Dimension {
    if (this.modelOf !== model) {
      this.model.reason = `${this.prefix}model_limit:${model}`;
      this.modelOf = model;
    }
    return this.model;
  }
}

const own = new PlanDims("");
const team = new PlanDims(TEAM);
/** The dimensions of the evaluation under way: the first `listed` of them. */
const dimList: Dimension[] = [];
let listed = 0;

function put(d: Dimension, max: number, used: number, estimate: number, soft: number, hard: number, resets: number | null): void {
  d.max = max;
  d.used = used;
  d.estimate = estimate;
  d.soft_gate_at = soft;
  d.hard_gate_at = hard;
  // A cap of 0, or a hard gate at 0 (or a mark that rounds to nothing), never lets a call through
  // by itself (SPEC's cancellation plan): no reset to wait for.
  const money = d.metric === "spend";
  d.resets_at = markOf(money, hard, money ? toNano(max) : max) > 0 ? resets : null;
  dimList[listed++] = d;
}

/** The gate reason of a plan limit: `limit:<name>`. */
export function limitReason(name: string): string {
  return own.limitReason(name);
}

/** The gate reason of a team plan's limit: `team:limit:<name>`. */
export function teamLimitReason(name: string): string {
  return team.limitReason(name);
}

/**
 * The metric a gate reason names by itself (a team's reasons as the user's): spend caps are
 * dollars, model caps tokens; undefined for `limit:<name>`, whose metric is the plan's to say.
 */
export function metricOfReason(reason: string): Metric | undefined {
  const own = reason.startsWith(TEAM) ? reason.slice(TEAM.length) : reason;
  if (own === "total_spend" || own === "session_spend") return "spend";
  if (own.startsWith("model_limit:")) return "tokens";
  return undefined;
}

/**
 * Every dimension of a plan for one call: SPEC's caps (as gates.ts) then each entry of
 * `limits` whose model is unset or the call's; with `t`, the team plan's caps and limits after
 * them. A limit's usage is its counter (counted plus held by calls in flight); its estimate is
 * the call's cost (spend) or tokens (tokens) as given, and 1 for `requests`: the call itself.
 * Per-limit gates override the plan's.
 */
export function evaluatePlan(plan: WindowPlan | null, u: WindowInput, t: TeamWindowInput | null = null): DimensionResult {
  listed = 0;
  if (plan) putPlan(own, plan, u, u.periodCost, u.modelTokens, u.periodEnd, u.counters, null);
  if (t !== null) putPlan(team, t.plan, u, t.periodCost, t.modelTokens, t.periodEnd, t.counters, t.memberCounters);
  return evaluateFirst(dimList, listed);
}

/**
 * One plan's period cap, session cap (the user's plan only: without `memberCounters`), the
 * call's model's cap and its limits (a scope-`member` one read from `memberCounters` when given).
 */
function putPlan(dims: PlanDims, plan: WindowPlan, u: WindowInput, periodCost: number, modelTokens: number, periodEnd: number | null, counters: readonly LimitCounter[], memberCounters: readonly LimitCounter[] | null): void {
  const soft = plan.soft_gate_at;
  const hard = plan.hard_gate_at;
  if (plan.max_spend_per_period !== null) put(dims.total, plan.max_spend_per_period, periodCost, u.estimateCost, soft, hard, plan.prepaid === true ? null : periodEnd);
  if (memberCounters === null && plan.max_spend_per_session !== null) put(dims.session, plan.max_spend_per_session, u.sessionCost, u.estimateCost, soft, hard, u.sessionEnd);
  // Own keys only: a model named "constructor" must not find Object.prototype's member.
  const ml = u.model === null || !Object.hasOwn(plan.model_limits, u.model) ? undefined : plan.model_limits[u.model];
  if (ml) put(dims.modelDim(u.model!), ml.max_tokens_per_period, modelTokens, u.estimateTokens, soft, hard, periodEnd);
  const limits = plan.limits;
  if (limits === undefined) return;
  for (let i = 0; i < limits.length; i++) {
    const l = limits[i]!;
    if (l.model != null && l.model !== u.model) continue;
    const member = memberScoped(l);
    const c = memberCounters !== null && member ? memberCounters[i] : counters[i];
    if (c === undefined) continue;
    let d = dims.limits[i];
    if (d === undefined) {
      d = { reason: "", metric: "spend", window: "day", duration_minutes: null, max: 0, used: 0, estimate: 0, soft_gate_at: 0, hard_gate_at: 0, resets_at: null, scope: null };
      dims.limits[i] = d;
    }
    d.reason = dims.limitReason(l.name);
    d.metric = l.metric;
    d.window = l.window;
    d.duration_minutes = l.duration_minutes ?? null;
    d.scope = memberCounters === null ? null : member ? "member" : "team";
    const used = usedOf(l, c) + c.held;
    const estimate = l.metric === "spend" ? u.estimateCost : l.metric === "tokens" ? u.estimateTokens : 1;
    put(d, l.max, l.metric === "spend" ? toDollars(used) : used, estimate, l.soft_gate_at ?? soft, l.hard_gate_at ?? hard, resetsOf(l, c));
  }
}
