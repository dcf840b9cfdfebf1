/**
 * Public types. Objects that mirror the service's records keep its snake_case field names;
 * options are camelCase.
 */
import type { CreditsView, GateEventFacts, LimitStatus } from "./rules/index.ts";

// One dimension as the service reports it: the rules package holds the shape for every reader (the console too).
export type { LimitBucket, LimitStatus } from "./rules/index.ts";

export interface MeterOptions {
  /** Product API key. Default: `METER_API_KEY`. */
  apiKey?: string;
  /** Service address including `/api/v1`. Default: `METER_BASE_URL`. */
  baseURL?: string;
  /** false: hard-gate callbacks fire and the call proceeds. Default true. */
  blocking?: boolean;
  /** Default 5000. */
  flushIntervalMs?: number;
  /** Events held for delivery at most; new ones are dropped when full. Default 10000. */
  maxQueueSize?: number;
  /** A cached session view is reloaded when older than this. Default 60000. */
  refreshIntervalMs?: number;
  /** Longest wait for the health check and for a user's first session load. Default 3000. */
  startupTimeoutMs?: number;
  /** Events per batch request. Default 1000. */
  maxBatchSize?: number;
  /** Per-request timeout of deliveries and reloads in the background. Default 10000. */
  requestTimeoutMs?: number;
  /** Longest wait of `shutdown()` for the queue to drain. Default 10000. */
  shutdownTimeoutMs?: number;
  /** Where warnings go (a dropped event, a failed delivery). Default `console`. */
  logger?: MeterLogger;
  /** Called with every delivery or load failure, besides the log; also with a refused API key and a wrong baseURL. */
  onError?: (error: Error) => void;
  /**
   * true: a user whose session view cannot be loaded (service unreachable, API key refused) is
   * hard-gated (gate_reason `session_unavailable`) instead of running on permissive defaults.
   * A user the service does not know (404) is not affected. Default false (fail open).
   */
  failClosed?: boolean;
  /**
   * Budget leases: spend a user's period cap from slices the service grants this process, so
   * that the cap holds across many replicas. Default false (the cap is checked locally).
   */
  leases?: boolean;
  /** With leases, when the service cannot be asked for more: "slice" (default) spends only what the lease holds; "open" lets calls pass. */
  leaseFallback?: "slice" | "open";
  /** With leases: lifetime of a lease (ms). Default 60000. */
  leaseTtlMs?: number;
  /** With leases: calls' worth (of the largest estimate seen, else of the largest cost a call took) asked for at a time; before either is known, cap / leaseCalls. Default 40. */
  leaseCalls?: number;
  /** With leases: a lease unused this long (ms) is given back. Default 10000. */
  leaseIdleMs?: number;
}

export interface MeterLogger {
  warn(message: string): void;
  /** A problem that turns metering off until someone fixes it (refused key, wrong baseURL); `warn` when absent. */
  error?(message: string): void;
}

export type GateStatus = "ok" | "soft_gate" | "hard_gate";

export interface GuardResult {
  status: GateStatus;
  /**
   * The deciding dimension: `total_spend`, `session_spend`, `model_limit:<model>` or
   * `limit:<name>` (an entry of the plan's `limits`); a member's team plan's `team:total_spend`,
   * `team:model_limit:<model>` or `team:limit:<name>`; `session_unavailable` for a user gated by
   * `failClosed`; null when ok.
   */
  gate_reason: string | null;
  /** The deciding dimension's usage (with this call's estimate) over its max. */
  usage_pct: number;
  /** The deciding dimension's usage (with this call's estimate): dollars for spend, else tokens or requests. */
  current_value: number;
  limit_value: number;
  message: string | null;
  /**
   * When the deciding dimension lets a call through again by itself (ISO 8601): the end of its
   * window (a calendar window in the plan's time zone, the billing period, the library's own
   * session) or, for a rolling window, when enough usage ages out. Null when ok, when it never
   * does (a max of 0) or is not known (a caller's session). Always set on the results the library
   * gives; optional so that a result built by hand (a test's LimitExceededError) needs none.
   */
  resets_at?: string | null;
}

export interface GateContext {
  user_id: string;
  session_id: string;
  model: string | null;
}

export interface UsageEvent {
  id: string;
  user_id: string;
  session_id: string | null;
  timestamp: string;
  model: string | null;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  tool_calls: string[];
  cost_tokens: number;
  cost_tools: number;
  cost_total: number;
  metadata: Record<string, unknown>;
  /** Pushed to the service yet. */
  synced: boolean;
  /** The budget lease the cost was spent from (`leases: true`). */
  lease_id?: string;
}

export interface GateEvent extends GateEventFacts {
  id: string;
  timestamp: string;
  metadata: Record<string, unknown>;
}

export interface BillingPeriod {
  start: string;
  end: string;
}

export interface SessionStartState {
  user_id: string;
  plan: string;
  billing_period: BillingPeriod;
}

export interface UserState {
  user_id: string;
  /** null while the service does not know the user (or has not answered yet). */
  service_user_id: string | null;
  plan: string;
  billing_period: BillingPeriod;
  /** The library's own session of the user (rotates after session_timeout_minutes). */
  session_id: string;
  period_cost: number;
  session_cost: number;
  period_tokens_by_model: Record<string, number>;
  period_cost_by_model: Record<string, number>;
  /**
   * The user's team as the library counts it (the team's sums over every member, with this
   * process's calls not yet in a view); null when the user is in no team with a subscription in
   * force. Absent from states built by hand.
   */
  team?: TeamState | null;
  /**
   * The user's prepaid credits as the library counts them (balance lowered by its own spend
   * past the allowance since the last view); null when the plan has credits disabled or no
   * allowance. Absent from states built by hand.
   */
  credits?: { balance: number; pending: number; low_at: number | null } | null;
}

/**
 * A team as the library counts it (UserState.team): the plan (the team plan's name) and the
 * billing period's sums, as a user's state shows its own, under the team's ids.
 */
export interface TeamState extends Pick<UserState, "plan" | "billing_period" | "period_cost" | "period_tokens_by_model" | "period_cost_by_model"> {
  /** The product's id of the team (external_team_id). */
  team_id: string;
  service_team_id: string | null;
}

/**
 * What the credits callbacks get (onCreditsLow, onCreditsDepleted, onCreditsExpired), in
 * dollars: the balance as this process counts it after the event, the plan's credits_low_at,
 * and for an expiry the grant and what of it expired.
 */
export interface CreditsEvent {
  userId: string;
  balance: number;
  lowAt: number | null;
  grantId?: string;
  amount?: number;
}

/** What a block names when the prepaid credits ran out (LimitExceededError.credits), in dollars. */
export interface LimitCredits {
  balance: number;
  lowAt: number | null;
}

export interface GuardInput {
  model?: string | null;
  /**
   * The caller's session id (a conversation): its spend is capped apart by max_spend_per_session.
   * Default: the session of the enclosing `meter.withUser(userId, fn, { session_id })` for
   * this user, else the library's own session of the user; null: the library's own.
   */
  session_id?: string | null;
  /** Input tokens of the coming call, for the pre-call estimate. */
  input_tokens?: number;
  /** The prompt, to estimate input tokens when `input_tokens` is not given (about 4 characters a token). */
  prompt?: unknown;
  /** The request's own output limit (max_tokens): the estimate's output, in place of the plan's pre_call_buffer_tokens. */
  max_output_tokens?: number;
  metadata?: Record<string, unknown>;
}

export interface UsageInput {
  input_tokens?: number;
  output_tokens?: number;
  /** Names of the tools the call used; each is priced from tool_costs, else default_tool_cost. */
  tool_calls?: string[];
  metadata?: Record<string, unknown>;
}

export interface RecordInput extends UsageInput {
  model?: string | null;
  /** As GuardInput's. */
  session_id?: string | null;
}

/** What `meter.start()` found. */
export interface StartResult {
  /** The service answered its health check (with its database reachable). */
  healthy: boolean;
  /** The service accepted the API key (an authenticated request); false when refused or not checked (unreachable). */
  authenticated: boolean;
}

/** `meter.call`'s input; `T` is what the call's function returns (inferred from it there). */
export interface CallInput<T = any> extends GuardInput {
  /** Reads what the call used from its result. */
  usage: (out: T) => UsageInput;
}

export interface ManualInput {
  cost?: number | null;
  model?: string | null;
  input_tokens?: number;
  output_tokens?: number;
  description?: string | null;
  tool_calls?: string[];
  metadata?: Record<string, unknown>;
  session_id?: string | null;
  /** Default: a fresh key, so that the library's own retries never create two events. */
  idempotency_key?: string | null;
}

export interface ManualEvent {
  id: string;
  user_id: string;
  cost: number;
  model: string | null;
  source: string;
  created_at: string;
}

/** A portal token minted by `Meter.portalToken()`: hand `token` to the user's browser (GET /portal/me, `<meter-usage>`). */
export interface PortalToken {
  /** Shown once; reads this one user's state and nothing else. */
  token: string;
  user_id: string;
  /** ISO 8601; the token is refused from then on. */
  expires_at: string;
}

export interface PortalTokenOptions {
  /** Lifetime in seconds, 60 to 86,400; default 3,600. */
  ttlSeconds?: number;
}

export interface MeterStats {
  /** Events waiting for delivery. */
  queued: number;
  /**
   * Of `queued`, usage events held until their user's plan is known (to price them): they wait
   * while the service is unreachable or refuses the key.
   */
  held: number;
  /** The service refused the API key (401/403) and has accepted no request of this client since: nothing is delivered. */
  key_refused: boolean;
  /** Events acknowledged by the service. */
  sent: number;
  /** Events dropped because the queue was full. */
  dropped: number;
  /** Events the service refused (4xx other than 401, 403, 404, 408 and 429, which are retried, and a 413 of more than one event, whose batch is sent again in halves); never retried. */
  rejected: number;
  /**
   * Batches the service answered 429 (it holds as much as it stores in a few seconds): each
   * stayed queued and went again after its `Retry-After`. Growing steadily: this process sends
   * faster than the service stores.
   */
  busy: number;
  /** Lease requests sent (`leases: true` only). */
  lease_requests?: number;
  /**
   * Calls that waited for a lease request's answer because what this process held did not cover
   * them (`leases: true` only): each user's first calls, and afterwards calls that found the slice
   * run dry (growing steadily far from a cap: the slices are too small for the calls' pace).
   */
  lease_waits?: number;
  /**
   * Users this process keeps a budget lease's book for (`leases: true` only). A user's book goes
   * once it has been idle for `leaseIdleMs` and its lease was given back, so it follows the users
   * active lately, not all users ever served.
   */
  leased_users?: number;
  /** The same for teams whose slices this process holds for their members (`leases: true` only). */
  leased_teams?: number;
  /** Users whose state is cached. */
  users: number;
}

/** A window's metric: dollars at the plan's prices, input plus output tokens, or metered calls. */
export type LimitMetric = "spend" | "tokens" | "requests";

/** Calendar windows reset in the plan's `time_zone` (weeks start on Monday); `period` is the billing period; `rolling` the last `duration_minutes`. */
export type LimitWindow = "minute" | "hour" | "day" | "week" | "month" | "period" | "rolling";

/** One entry of a plan's `limits`: a cap on one metric over one window, named in gates as `limit:<name>`. */
export interface PlanLimit {
  /** 1-64 of `[a-z0-9_-]`, unique in the plan. */
  name: string;
  metric: LimitMetric;
  /** Dollars for spend; a whole number of tokens or requests. 0 blocks every call. */
  max: number;
  window: LimitWindow;
  /** Rolling windows only: their length in minutes (1-44,640). */
  duration_minutes?: number | null;
  /** Count only calls of this normalized model; null: every call. */
  model?: string | null;
  /** This limit's own marks; null: the plan's. */
  soft_gate_at?: number | null;
  hard_gate_at?: number | null;
  /** In a team plan: `team` (default) caps the sum over the members, `member` each member apart. */
  scope?: "team" | "member" | null;
}

/** The session view (GET /users/{user_id}/session) as the service sends it. */
export interface SessionView {
  user_id: string;
  service_user_id: string;
  plan: string;
  /** The plan in force (matched against GET /config/changes); absent from services before it. */
  plan_id?: string | null;
  sdk_enabled: boolean;
  plan_config: PlanConfigView;
  current_usage: {
    period_cost: number;
    period_tokens_total: number;
    period_tokens_by_model: Record<string, number>;
    period_cost_by_model: Record<string, number>;
  };
  billing_period: BillingPeriod;
  /** Every dimension of the user with its usage and reset; absent from services before windows. */
  limits?: LimitStatus[];
  /** The user's prepaid credits; null (or absent, from services before credits) when the plan has them disabled. */
  credits?: CreditsView | null;
  /**
   * The user's team with a subscription in force (its plan, sums and period); null (or absent,
   * from services before teams) when the user is in no such team. Its dimensions are in
   * `limits`, named `team:...`.
   */
  team?: TeamView | null;
}

/** The session view's `team` block: the team plan and the team's sums over its members. */
export interface TeamView {
  /** external_team_id. */
  team_id: string;
  service_team_id: string;
  plan: string;
  plan_id?: string | null;
  /** Same shape as the user's; its caps apply to the team's sums, its session cap is not applied. */
  plan_config: PlanConfigView;
  current_usage: SessionView["current_usage"];
  billing_period: BillingPeriod;
  /** The team's shared pool when the team plan has credits (drawn after the member's own); its balance is in `team:total_spend`'s max. */
  credits?: CreditsView | null;
}

export interface Rate {
  input: number;
  output: number;
}

/**
 * plan_config as the service sends it: an unlimited cap is omitted (older services sent null);
 * the library reads both as unlimited (null in PlanConfig).
 */
export type PlanConfigView = Omit<PlanConfig, "max_spend_per_period" | "max_spend_per_session" | "default_cost_rate" | "limits" | "time_zone"> & {
  max_spend_per_period?: number | null;
  max_spend_per_session?: number | null;
  default_cost_rate?: Rate | null;
  /** Absent from services before windows: none. */
  limits?: PlanLimit[];
  /** Absent from services before windows: UTC. */
  time_zone?: string;
};

/** A plan's settings as the library applies them: null is unlimited (or, for a rate, none). */
export interface PlanConfig {
  max_spend_per_period: number | null;
  max_spend_per_session: number | null;
  soft_gate_at: number;
  hard_gate_at: number;
  model_limits: Record<string, { max_tokens_per_period: number }>;
  cost_rates: Record<string, Rate>;
  session_timeout_minutes: number;
  default_cost_rate: Rate | null;
  tool_costs: Record<string, number>;
  default_tool_cost: number;
  pre_call_estimate: boolean;
  pre_call_buffer_tokens: number;
  /** Caps over windows (a day, a month, a rolling 5 hours, a minute's requests ...); [] for none. */
  limits: PlanLimit[];
  /** IANA time zone the calendar windows reset in. */
  time_zone: string;
  /** Prepaid credits extend the period cap (absent from services before credits: off). */
  credits_enabled?: boolean;
  /** The balance below which onCreditsLow fires; null or absent: never. */
  credits_low_at?: number | null;
  /** Set by the library when the period cap is prepaid credits with no allowance (rules/dimensions.ts WindowPlan). */
  prepaid?: boolean;
}
