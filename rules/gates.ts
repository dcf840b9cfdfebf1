import { ratio, toDollars, toNano } from "./money.ts";

/**
 * Gate evaluation (pure): every dimension of a plan against its soft and hard thresholds;
 * the worst dimension decides.
 */

/** The settings a gate reads, as the API names them (null caps: unlimited). */
export interface GatePlan {
  max_spend_per_period: number | null;
  max_spend_per_session: number | null;
  soft_gate_at: number;
  hard_gate_at: number;
  model_limits: Readonly<Record<string, { max_tokens_per_period: number }>>;
}

export interface GateResult {
  status: "ok" | "soft_gate" | "hard_gate";
  /** `total_spend`, `session_spend` or `model_limit:<model>`; null when ok. */
  gate_reason: string | null;
  usage_pct: number;
  current_value: number;
  limit_value: number;
  message: string | null;
}

const OK = 0;
const SOFT = 1;
const HARD = 2;
const STATUS = ["ok", "soft_gate", "hard_gate"] as const;
const EPSILON = 1e-9;
const KIND_TOTAL = 1;
const KIND_SESSION = 2;
const KIND_MODEL = 3;

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

// The worst dimension so far, kept in module variables so that a guard allocates only its result.
let worstRank = OK;
let worstPct = 0;
let worstValue = 0;
let worstLimit = 0;
let worstReason: string | null = null;
let worstKind = 0;
let worstUsed = 0;
let worstEstimate = 0;

/**
 * One dimension. Reaching `hard_gate_at` of the limit blocks; with an estimate, so does a call
 * whose estimate would take usage past it (a call that would land exactly on the cap runs).
 * A limit of 0 blocks everything. Money is compared in whole nano-dollars (money.ts), so a
 * sum lands exactly on a mark; usage_pct is the ratio rounded to 1e-6.
 */
function dimension(kind: number, reason: string | null, used: number, estimate: number, limit: number, soft: number, hard: number): void {
  const money = kind !== KIND_MODEL;
  const u = money ? toNano(used) : used;
  const e = money ? toNano(estimate) : estimate;
  const l = money ? toNano(limit) : limit;
  const projected = u + e;
  const pct = l > 0 ? ratio(projected, l) : 1;
  // Tokens: a relative tolerance for marks that are not whole (0.8 x 1001); money marks are
  // rounded to the unit and compared exactly.
  const tol = money ? 0 : l * EPSILON;
  const hardMark = money ? Math.round(hard * l) : hard * l;
  const softMark = money ? Math.round(soft * l) : soft * l;
  let rank = OK;
  if (l <= 0 || u >= hardMark - tol || (e > 0 && projected > hardMark + tol)) rank = HARD;
  else if (projected >= softMark - tol) rank = SOFT;
  if (rank > worstRank || (rank === worstRank && (pct > worstPct || worstKind === 0))) {
    worstRank = rank;
    worstPct = pct;
    worstValue = money ? toDollars(projected) : projected;
    worstLimit = money ? toDollars(l) : l;
    worstReason = reason;
    worstKind = kind;
    worstUsed = money ? toDollars(u) : u;
    worstEstimate = money ? toDollars(e) : e;
  }
}

export function evaluate(plan: GatePlan | null, u: GateInput): GateResult {
  worstRank = OK;
  worstPct = 0;
  worstValue = 0;
  worstLimit = 0;
  worstReason = null;
  worstKind = 0;
  worstUsed = 0;
  worstEstimate = 0;
  if (plan) {
    const soft = plan.soft_gate_at;
    const hard = plan.hard_gate_at;
    if (plan.max_spend_per_period !== null) {
      dimension(KIND_TOTAL, "total_spend", u.periodCost, u.estimateCost, plan.max_spend_per_period, soft, hard);
    }
    if (plan.max_spend_per_session !== null) {
      dimension(KIND_SESSION, "session_spend", u.sessionCost, u.estimateCost, plan.max_spend_per_session, soft, hard);
    }
    // Own keys only: a model named "constructor" must not find Object.prototype's member.
    const limit = u.model === null || !Object.hasOwn(plan.model_limits, u.model) ? undefined : plan.model_limits[u.model];
    if (limit) {
      dimension(KIND_MODEL, null, u.modelTokens, u.estimateTokens, limit.max_tokens_per_period, soft, hard);
    }
  }
  if (worstRank === OK) {
    return { status: "ok", gate_reason: null, usage_pct: worstPct, current_value: worstValue, limit_value: worstLimit, message: null };
  }
  const reason = worstKind === KIND_MODEL ? `model_limit:${u.model}` : worstReason!;
  return {
    status: STATUS[worstRank]!,
    gate_reason: reason,
    usage_pct: worstPct,
    current_value: worstValue,
    limit_value: worstLimit,
    message: describe(worstRank, worstKind, u.model, worstUsed, worstEstimate, worstLimit),
  };
}

/**
 * What was used (settled calls plus the estimates of calls in flight) and, apart, what this
 * call's estimate would add: the projection is not spend, and must not read as such.
 */
function describe(rank: number, kind: number, model: string | null, used: number, estimate: number, limit: number): string {
  const what = rank === HARD ? "limit reached" : "approaching the limit";
  const pct = (x: number) => `${limit > 0 ? Math.round((x / limit) * 100) : 100}%`;
  if (kind === KIND_MODEL) {
    const head = `Token ${what} for ${model} this period: ${used} of ${limit} tokens used (${pct(used)})`;
    return estimate > 0 ? `${head}; this call's estimate of ${estimate} tokens would bring it to ${used + estimate} (${pct(used + estimate)})` : head;
  }
  const scope = kind === KIND_TOTAL ? "Spend" : "Session spend";
  const head = `${scope} ${what}: $${used.toFixed(4)} of $${limit.toFixed(2)} spent (${pct(used)})`;
  return estimate > 0 ? `${head}; this call's estimate of $${estimate.toFixed(4)} would bring it to $${(used + estimate).toFixed(4)} (${pct(used + estimate)})` : head;
}
