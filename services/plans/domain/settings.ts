// Plan settings: defaults, validation and partial updates. Pure functions, no I/O.
import { characters } from "@meter/lib/characters";
import type { PlanSettings } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcError } from "@meter/lib/errors";
import { BELOW_UNIT, MAX_PLAN_DOLLARS, PLAN_DEFAULTS as RULE_DEFAULTS, belowUnit, roundDollars, timeZoneName, type PlanRules, type Rate } from "@meter/rules";
import { limitFromMessage } from "@meter/lib/plan-limits";
import { WINDOW_DEFAULTS, limitProblems, type PlanLimit } from "./limits.ts";
import { CREDIT_DEFAULTS, creditProblems } from "./credits.ts";

export { type Rate };

/** Every setting of a stored plan, defaults filled in. Maps are plain records here. */
export interface PlanValues extends PlanRules {
  name: string;
  limits: PlanLimit[];
  time_zone: string;
  credits_enabled: boolean;
  credits_low_at: number | null;
}

/** Defaults of every plan setting but the name. */
export const PLAN_DEFAULTS: Readonly<Omit<PlanValues, "name">> = Object.freeze({ ...RULE_DEFAULTS, ...WINDOW_DEFAULTS, ...CREDIT_DEFAULTS });

export type PlanField = keyof PlanValues;

/** The PlanSettings field names an update mask may name (proto names = JSON names). */
export const PLAN_FIELDS: readonly PlanField[] = ["name", ...(Object.keys(PLAN_DEFAULTS) as PlanField[])];

export const LIMITS = {
  nameLength: 255,
  /** Longest key (model or tool name) in a plan's maps. */
  keyLength: 255,
  /** Most entries in one of a plan's maps. */
  mapEntries: 1000,
  /** Most plans in one CreatePlans request. */
  plansPerRequest: 100,
  /**
   * Most plans of one product (plans are never deleted: change one instead). With plans of at
   * most 1 MiB (the gateway's body limit), a product's listing stays under the 64 MiB of an RPC.
   */
  plansPerProduct: 50,
  /**
   * Most bytes of a product's plans together, as JSON (planSize): what one request body may
   * carry, so that one plan with its three maps full fits, and a product's listing, its users'
   * plans and its database stay small however its plans are split.
   */
  planBytesPerProduct: 1024 * 1024,
} as const;

/** A plan's size as counted against LIMITS.planBytesPerProduct: UTF-8 bytes of its settings as JSON. */
export function planSize(v: PlanValues): number {
  // A plan without windows or credits counts as it did before they existed (stored totals stay exact).
  const fields = PLAN_FIELDS.filter(
    (f) =>
      !(f === "limits" && v.limits.length === 0) &&
      !(f === "time_zone" && v.time_zone === WINDOW_DEFAULTS.time_zone) &&
      !((f === "credits_enabled" || f === "credits_low_at") && v[f] === CREDIT_DEFAULTS[f]),
  );
  return Buffer.byteLength(JSON.stringify(Object.fromEntries(fields.map((f) => [f, v[f]]))), "utf8");
}

/** The fields set in a PlanSettings message, as plan values (maps only when non-empty). */
export function fromSettings(s: PlanSettings): Partial<PlanValues> {
  const out: Partial<PlanValues> = {};
  if (s.name !== undefined) out.name = s.name;
  if (s.maxSpendPerPeriod !== undefined) out.max_spend_per_period = s.maxSpendPerPeriod;
  if (s.maxSpendPerSession !== undefined) out.max_spend_per_session = s.maxSpendPerSession;
  if (s.sessionTimeoutMinutes !== undefined) out.session_timeout_minutes = s.sessionTimeoutMinutes;
  if (s.softGateAt !== undefined) out.soft_gate_at = s.softGateAt;
  if (s.hardGateAt !== undefined) out.hard_gate_at = s.hardGateAt;
  if (Object.keys(s.modelLimits).length > 0) {
    out.model_limits = mapValues(s.modelLimits, (l) => Number(l.maxTokensPerPeriod));
  }
  if (Object.keys(s.costRates).length > 0) {
    out.cost_rates = mapValues(s.costRates, (r) => ({ input: r.input, output: r.output }));
  }
  if (s.defaultCostRate !== undefined) {
    out.default_cost_rate = { input: s.defaultCostRate.input, output: s.defaultCostRate.output };
  }
  if (Object.keys(s.toolCosts).length > 0) out.tool_costs = { ...s.toolCosts };
  if (s.defaultToolCost !== undefined) out.default_tool_cost = s.defaultToolCost;
  if (s.preCallEstimate !== undefined) out.pre_call_estimate = s.preCallEstimate;
  if (s.preCallBufferTokens !== undefined) out.pre_call_buffer_tokens = Number(s.preCallBufferTokens);
  // An empty list is "not sent" (proto3 repeated): PATCH naming limits with none clears them.
  if (s.limits.length > 0) out.limits = s.limits.map(limitFromMessage);
  if (s.timeZone !== undefined) out.time_zone = timeZoneName(s.timeZone) ?? s.timeZone;
  if (s.creditsEnabled !== undefined) out.credits_enabled = s.creditsEnabled;
  if (s.creditsLowAt !== undefined) out.credits_low_at = s.creditsLowAt;
  return out;
}

function mapValues<A, B>(m: Record<string, A>, f: (a: A) => B): Record<string, B> {
  return Object.fromEntries(Object.entries(m).map(([k, v]) => [k, f(v)]));
}

/**
 * A new plan from the fields sent: the plan's own gate thresholds win, then the request-wide
 * ones, then the defaults (0.80 / 1.00).
 */
export function newPlanValues(
  sent: Partial<PlanValues>,
  requestGates: { soft_gate_at?: number; hard_gate_at?: number } = {},
): PlanValues {
  const defined = Object.fromEntries(Object.entries(requestGates).filter(([, v]) => v !== undefined));
  return { ...PLAN_DEFAULTS, ...defined, ...sent, name: sent.name ?? "" };
}

/**
 * Applies an update mask: a named field takes the value sent; a named field left unset goes
 * back to its default (for max_spend_* and default_cost_rate: unlimited / none); maps are
 * replaced whole. Unknown field names are refused.
 */
export function applyMask(current: PlanValues, sent: Partial<PlanValues>, paths: readonly string[]): PlanValues {
  const next: PlanValues = { ...current };
  for (const path of paths) {
    if (!(PLAN_FIELDS as readonly string[]).includes(path)) {
      throw rpcError.invalid(`unknown plan field "${path}"; known fields: ${PLAN_FIELDS.join(", ")}`);
    }
    const field = path as PlanField;
    if (field === "name" && sent.name === undefined) throw rpcError.invalid("name cannot be cleared");
    (next as unknown as Record<string, unknown>)[field] =
      sent[field] ?? (PLAN_DEFAULTS as unknown as Record<string, unknown>)[field];
  }
  return next;
}

/** Every problem with a plan's values, each naming the field (under `prefix`). */
export function planProblems(v: PlanValues, prefix = ""): string[] {
  const problems: string[] = [];
  const at = (f: string) => `${prefix}${f}`;
  const money = (f: string, x: number | null) => {
    if (x !== null && !(Number.isFinite(x) && x >= 0 && x <= MAX_PLAN_DOLLARS)) problems.push(`${at(f)} must be a number of dollars, 0-${MAX_PLAN_DOLLARS.toLocaleString("en-US")}`);
    else if (x !== null && belowUnit(x)) problems.push(`${at(f)} ${BELOW_UNIT}`);
  };
  const count = (f: string, x: number) => {
    if (!(Number.isSafeInteger(x) && x >= 0)) problems.push(`${at(f)} must be a non-negative integer`);
  };
  const ratio = (f: string, x: number) => {
    if (!(Number.isFinite(x) && x >= 0 && x <= 1)) problems.push(`${at(f)} must be between 0 and 1`);
  };
  const keys = (f: string, m: Record<string, unknown>) => {
    const names = Object.keys(m);
    if (names.length > LIMITS.mapEntries) problems.push(`${at(f)} has more than ${LIMITS.mapEntries} entries`);
    for (const k of names) {
      if (k.length === 0 || characters(k) > LIMITS.keyLength) {
        problems.push(`${at(f)} keys must be 1-${LIMITS.keyLength} characters`);
        break;
      }
    }
  };

  if (v.name.trim().length === 0) problems.push(`${at("name")} must not be empty`);
  else if (characters(v.name) > LIMITS.nameLength) problems.push(`${at("name")} must be at most ${LIMITS.nameLength} characters`);
  money("max_spend_per_period", v.max_spend_per_period);
  money("max_spend_per_session", v.max_spend_per_session);
  if (!(Number.isFinite(v.session_timeout_minutes) && v.session_timeout_minutes > 0)) {
    problems.push(`${at("session_timeout_minutes")} must be a positive number`);
  }
  ratio("soft_gate_at", v.soft_gate_at);
  ratio("hard_gate_at", v.hard_gate_at);
  if (v.soft_gate_at > v.hard_gate_at) {
    problems.push(`${at("soft_gate_at")} (${v.soft_gate_at}) must not exceed ${at("hard_gate_at")} (${v.hard_gate_at})`);
  }
  keys("model_limits", v.model_limits);
  for (const [model, max] of Object.entries(v.model_limits)) count(`model_limits.${model}.max_tokens_per_period`, max);
  keys("cost_rates", v.cost_rates);
  for (const [model, r] of Object.entries(v.cost_rates)) {
    money(`cost_rates.${model}.input`, r.input);
    money(`cost_rates.${model}.output`, r.output);
  }
  if (v.default_cost_rate) {
    money("default_cost_rate.input", v.default_cost_rate.input);
    money("default_cost_rate.output", v.default_cost_rate.output);
  }
  keys("tool_costs", v.tool_costs);
  for (const [tool, c] of Object.entries(v.tool_costs)) money(`tool_costs.${tool}`, c);
  money("default_tool_cost", v.default_tool_cost);
  count("pre_call_buffer_tokens", v.pre_call_buffer_tokens);
  problems.push(...limitProblems(v, prefix));
  problems.push(...creditProblems(v, prefix));
  return problems;
}

/**
 * A valid plan's amounts as they are kept and answered: caps, tool costs, spend windows' max and
 * credits_low_at rounded to the nano-dollar (a cap sent as 0.30000000000000004 is $0.30 in every
 * answer, gate and webhook). Rates are per 1K tokens and kept as sent: a price is rounded once,
 * at the event.
 */
export function roundAmounts(v: PlanValues): PlanValues {
  const r = (x: number | null) => (x === null ? null : roundDollars(x));
  return {
    ...v,
    max_spend_per_period: r(v.max_spend_per_period),
    max_spend_per_session: r(v.max_spend_per_session),
    tool_costs: mapValues(v.tool_costs, roundDollars),
    default_tool_cost: roundDollars(v.default_tool_cost),
    credits_low_at: r(v.credits_low_at),
    limits: v.limits.map((l) => (l.metric === "spend" ? { ...l, max: roundDollars(l.max) } : l)),
  };
}

/** Problems an answer names; the rest are counted (a body of thousands of bad limits stays a short answer). */
const MAX_PROBLEMS = 50;

/** Throws INVALID_ARGUMENT listing the problems (the first MAX_PROBLEMS, then how many more). */
export function assertValid(problems: string[]): void {
  if (problems.length === 0) return;
  const more = problems.length - MAX_PROBLEMS;
  throw rpcError.invalid(problems.slice(0, MAX_PROBLEMS).join("; ") + (more > 0 ? `; and ${more} more` : ""));
}
