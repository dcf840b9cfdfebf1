/**
 * The rules of the API (docs/api.md) as pure functions, defined once: every service imports them as
 * @meter/rules, and meterline compiles them into its own build (it has no runtime dependency).
 * One table of cases, rules/cases.json, holds them to account; the Python client
 * runs the same table against its own implementation.
 */
export { NO_PLAN_CONFIG, PLAN_DEFAULTS, type PlanRules, type Rate } from "./plans.ts";
export { estimateTokens, normalizeModel, price, rateOf, tokenCost, toolsCost, type Priced, type Pricing } from "./pricing.ts";
export { BELOW_UNIT, MAX_PLAN_DOLLARS, NANOS_PER_DOLLAR, RATIO_SCALE, addDollars, belowUnit, ratio, roundDollars, roundRatio, toDollars, toNano, tokenCostNano } from "./money.ts";
export { evaluate, type GateInput, type GatePlan, type GateResult } from "./gates.ts";
export { THRESHOLDS, hasThresholds, reachedThresholds } from "./thresholds.ts";
export { CREDIT_EVENT_TYPES, WEBHOOK_EVENT_TYPES, type GateEventFacts, type WebhookEventType } from "./events.ts";
export { MAX_EVENT_TOKENS, MAX_EVENT_TOTAL_TOKENS, MAX_GATE_FIGURE, METADATA_MAX_DEPTH, externalIdProblem, jsonDepth } from "./event-bounds.ts";
export {
  calendarMonth,
  parseUsagePeriod,
  periodAt,
  rollOn,
  type BillingPeriod,
  type SubscriptionWindow,
  type UsagePeriod,
} from "./periods.ts";
export { sessionWindowMs, windowOver } from "./sessions.ts";
// Every name of windows.ts and counters.ts is part of the rules.
export * from "./windows.ts";
export {
  TEAM,
  evaluateDimensions,
  evaluatePlan,
  gateState,
  limitReason,
  metricOfReason,
  teamLimitReason,
  type Dimension,
  type DimensionResult,
  type LimitBucket,
  type LimitStatus,
  type TeamWindowInput,
  type WindowInput,
  type WindowPlan,
} from "./dimensions.ts";
export * from "./counters.ts";
export {
  blockedByCredits,
  creditBalance,
  creditCap,
  creditCrossing,
  creditsDrawn,
  type BlockCredits,
  type CreditCrossing,
  type CreditExpiry,
  type CreditsView,
} from "./credits.ts";
