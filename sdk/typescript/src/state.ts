/** What the library holds for one user: plan, period counters, sessions, reservations. */
import { byName } from "./own.ts";
import { NO_PLAN_CONFIG, calendarMonth, sessionWindowMs } from "./rules/index.ts";
import { Sessions, type Session } from "./sessions.ts";
import type { PlanConfig, UsageEvent, UserState } from "./types.ts";

export class UserEntry {
  serviceUserId: string | null = null;
  plan = "none";
  /** Id of the plan in force (null without one): a change of it is announced by GET /config/changes. */
  planId: string | null = null;
  /** Reload once more at the next flush tick: the change marker named this user, and a read racing the change may have been stale. */
  recheck = false;
  /** Null: no plan in force (or not loaded); nothing is gated or priced. */
  config: PlanConfig | null = null;
  /** True once a session view was applied; false for a user not (yet) known to the service. */
  loaded = false;
  /** The service answered 404: the user is not registered (permissive defaults). */
  unknown = false;
  /** onSessionStart fired. */
  started = false;

  periodStart: string;
  periodEnd: string;
  periodEndMs: number;
  periodCost = 0;
  tokensByModel: Record<string, number> = byName();
  costByModel: Record<string, number> = byName();

  /** Pre-call estimates in flight. */
  reservedCost = 0;
  reservedTokens: Record<string, number> = byName();
  inFlight = 0;
  /** Events of the user still queued for delivery. */
  pending = 0;
  /** Usage recorded before the plan was known: priced when the session view arrives. */
  unpriced: { event: UsageEvent; session: Session }[] = [];

  sessions: Sessions;
  /** SPEC.md's session window until the user's plan is known. */
  timeoutMs = sessionWindowMs(NO_PLAN_CONFIG.session_timeout_minutes);
  lastActive: number;
  /** When the view is due for a reload. */
  refreshAt = 0;
  refreshing: Promise<void> | null = null;
  /** The last load failed (warned once). */
  loadFailed = false;
  /** Last gate event written per (gate_reason, status): when, and how many were not written since. */
  lastGateEvent: Map<string, { at: number; suppressed: number }> | undefined;
  /** Raw model name → normalized, for the plan in force. */
  readonly models = new Map<string, string>();

  constructor(
    readonly userId: string,
    now: number,
  ) {
    // Until the service answers, the period is the calendar month (what it uses without a plan).
    const { start, end } = calendarMonth(new Date(now));
    this.periodStart = start.toISOString();
    this.periodEnd = end.toISOString();
    this.periodEndMs = end.getTime();
    this.sessions = new Sessions(now);
    this.lastActive = now;
  }

  snapshot(now: number): UserState {
    const own = this.sessions.current(now, this.timeoutMs);
    return {
      user_id: this.userId,
      service_user_id: this.serviceUserId,
      plan: this.plan,
      billing_period: { start: this.periodStart, end: this.periodEnd },
      session_id: own.id,
      period_cost: this.periodCost,
      session_cost: own.cost,
      period_tokens_by_model: { ...this.tokensByModel },
      period_cost_by_model: { ...this.costByModel },
    };
  }

  /** Idle: nothing in flight or queued, and no session active within its window. */
  idle(now: number): boolean {
    return this.inFlight === 0 && this.pending === 0 && this.sessions.idle(now, this.timeoutMs);
  }
}
