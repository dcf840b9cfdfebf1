/**
 * What the library holds for one user: plan, period counters, sessions, reservations, and
 * its standing with the service (loading, deliveries in flight, gate events written). The
 * counters change only through the methods below, each named for what happened. The plan and
 * period fields are read everywhere and written only by the session-view merge of session-view.ts
 * (applyView, rollLocally, pure rules over this record) through apply() and rollOver(), by
 * count(), and by notRegistered(). A member of a team also points at the team's entry, shared
 * with the other members (team-state.ts), and keeps its own counters of the team plan's
 * scope-`member` limits.
 */
import type { CreditsNews, UserCredits } from "./credits.ts";
import { MeterTypeError } from "./errors.ts";
import { byName, own } from "./own.ts";
import { applyView, keepCounters, rollLocally, withCap, type Merge } from "./session-view.ts";
import { advanceAll, countAll, teamLimitOf, type TeamEntry, type Teams } from "./team-state.ts";
import { normalizeModel } from "./pricing.ts";
import { RecentCalls } from "./recent-calls.ts";
import { NO_PLAN_CONFIG, addDollars, calendarMonth, memberScoped, mergeView, sessionWindowMs, unitOf, type LimitCounter, type PlanLimit, type TeamWindowInput } from "./rules/index.ts";
import { Sessions, type Session } from "./user-sessions.ts";
import type { PlanConfig, SessionView, UsageEvent, UserState } from "./types.ts";

const NO_COUNTERS: LimitCounter[] = [];
/** What teamGate() fills for each check. */
const TEAM_GATE: TeamWindowInput = { plan: NO_PLAN_CONFIG as unknown as PlanConfig, periodCost: 0, modelTokens: 0, periodEnd: null, counters: NO_COUNTERS, memberCounters: NO_COUNTERS };
const NO_NEWS: CreditsNews[] = [];

/** Distinct model names remembered per user (normalization cache). */
const MODEL_CACHE = 256;

/** The amounts a reserved call holds until it is committed or released. */
export interface Held {
  session: Session;
  model: string | null;
  cost: number;
  tokens: number;
  /** The plan's limits and their counters the call held against (set by hold()): given back to those, even after a reload changed them. */
  limits?: readonly PlanLimit[];
  counters?: readonly LimitCounter[];
  /** The member's team the call held on, with the team plan's limits and the team's and the member's counters of them (set by hold()). */
  team?: TeamEntry;
  teamLimits?: readonly PlanLimit[];
  teamCounters?: readonly LimitCounter[];
  memberCounters?: readonly LimitCounter[];
}

export class UserEntry {
  // ---- set by a session view (session-view.ts), read everywhere ----
  serviceUserId: string | null = null;
  plan = "none";
  /** Id of the plan in force (null without one): a change of it is announced by GET /config/changes. */
  planId: string | null = null;
  /** Null: no plan in force (or not loaded); nothing is gated or priced. With credits, its period cap includes the balance. */
  config: PlanConfig | null = null;
  /** The plan model names are normalized over: `config`, or the team plan for a member priced at it. */
  naming: PlanConfig | null = null;
  /** The user's team (with a subscription in force), shared with its other members; null: none. */
  team: TeamEntry | null = null;
  /** One per entry of the team plan's `limits`: this member's counter of a scope-`member` one (others unread). */
  memberCounters: LimitCounter[] = NO_COUNTERS;
  /** The team plan `memberCounters` were made for: another one (a view of another member changed it) re-keys them. */
  #memberPlan: PlanConfig | null = null;
  /** Prepaid credits when the plan has them enabled with an allowance, else null (credits.ts). */
  credits: UserCredits | null = null;
  /** True once a session view was applied; false for a user not (yet) known to the service. */
  loaded = false;
  /** The service answered 404: the user is not registered (permissive defaults). */
  unknown = false;
  periodStart: string;
  periodEnd: string;
  periodEndMs: number;
  periodCost = 0;
  tokensByModel: Record<string, number> = byName();
  costByModel: Record<string, number> = byName();
  /** One per entry of `config.limits`, in plan order: what each window counted (rules/counters.ts). */
  counters: LimitCounter[] = NO_COUNTERS;
  sessions: Sessions;
  /** The default session window until the user's plan is known. */
  timeoutMs = sessionWindowMs(NO_PLAN_CONFIG.session_timeout_minutes);
  /** Raw model name → normalized, for the plan in force. */
  readonly models = new Map<string, string>();

  // ---- changed only through the methods below ----
  /** Reservations of the calls in flight. */
  #reservedCost = 0;
  #reservedTokens: Record<string, number> = byName();
  #inFlight = 0;
  /** Events of the user still queued for delivery. */
  #pending = 0;
  /** Usage recorded before the plan was known: priced when the session view arrives. */
  #unpriced: { event: UsageEvent; session: Session }[] = [];
  /** When the view is due for a reload. */
  #refreshAt = 0;
  #refreshing: Promise<void> | null = null;
  /** The last load failed (warned once). */
  #loadFailed = false;
  /** onSessionStart fired. */
  #started = false;
  /** Reload once more at the next flush tick: the change marker named this user, and a read racing the change may have been stale. */
  #recheck = false;
  /** The last real calls per normalized model ("" for none): what a call reserves by default. */
  #recent: Map<string, RecentCalls> | undefined;
  /** Last gate event written per (gate_reason, status): when, and how many were not written since. */
  #lastGateEvent: Map<string, { at: number; suppressed: number }> | undefined;

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
  }

  get reservedCost(): number {
    return this.#reservedCost;
  }
  get reservedTokens(): Readonly<Record<string, number>> {
    return this.#reservedTokens;
  }
  get refreshAt(): number {
    return this.#refreshAt;
  }
  /** The reload under way, or null. */
  get refreshing(): Promise<void> | null {
    return this.#refreshing;
  }
  get loadFailed(): boolean {
    return this.#loadFailed;
  }

  // ---- the session view ----

  /** Merges a session view in (see session-view.ts), its team block into the team's entry of `teams`; the next reload is due `refreshMs` from now. True the first time a view is applied (onSessionStart). */
  apply(view: SessionView, now: number, refreshMs: number, teams: Teams): { merge: Merge; first: boolean } {
    const merge = applyView(this, view, now);
    if (merge === "reset") this.#recent = undefined;
    this.applyTeam(view, now, teams, merge === "reset");
    this.#loadFailed = false;
    this.#refreshAt = now + refreshMs;
    const first = !this.#started;
    this.#started = true;
    return { merge, first };
  }

  /**
   * The view's team: its block merged into the team's shared entry (unless older than what the
   * entry holds), then the member's own counters of scope-`member` limits re-keyed to the team
   * plan and the view's figures of them merged in. Another team than before (the user moved):
   * the member's counters start again.
   */
  private applyTeam(view: SessionView, now: number, teams: Teams, reset: boolean): void {
    const tv = view.team ?? null;
    if (tv === null) {
      this.team = null;
      this.memberCounters = NO_COUNTERS;
      this.#memberPlan = null;
      return;
    }
    const team = teams.of(tv.team_id);
    const current = team.apply(tv, view.limits, now);
    if (team !== this.team || reset) {
      this.memberCounters = NO_COUNTERS;
      this.#memberPlan = null;
    }
    this.team = team;
    this.syncTeam(now);
    const plan = team.config;
    if (!current || plan === null || view.limits === undefined) return;
    const period = team.period();
    for (const v of view.limits) {
      const i = teamLimitOf(plan, v);
      if (i >= 0 && memberScoped(plan.limits[i]!)) mergeView(plan.limits[i]!, this.memberCounters[i]!, v, now, plan.time_zone, period);
    }
  }

  /** The member's counters fit the team plan in force (another member's view may have changed it). */
  syncTeam(now: number): void {
    const plan = this.team?.config ?? null;
    if (plan === this.#memberPlan) return;
    this.memberCounters = plan === null ? NO_COUNTERS : keepCounters(this.#memberPlan, this.memberCounters, plan, now, this.team!.period());
    this.#memberPlan = plan;
  }

  /**
   * A member's team figures for the check of a call of `model` (after advanceWindows): the team
   * plan, the team's sums with what calls in flight hold, its counters and the member's. One
   * object reused by every check (a check allocates only its result); null outside a team.
   */
  teamGate(model: string | null): TeamWindowInput | null {
    const t = this.team;
    if (t === null || t.config === null) return null;
    const g = TEAM_GATE;
    g.plan = t.config;
    g.periodCost = addDollars(t.periodCost, t.reservedCost);
    g.modelTokens = model === null ? 0 : (own(t.tokensByModel, model) ?? 0) + (own(t.reservedTokens, model) ?? 0);
    g.periodEnd = t.periodEndMs;
    g.counters = t.counters;
    g.memberCounters = this.memberCounters;
    return g;
  }

  /** The period ended and the service gave no new one: counters cleared locally (session-view.ts). */
  rollOver(now: number): void {
    rollLocally(this, now);
  }

  /** The service answered 404: not registered (or deleted); back to permissive defaults with empty counters. */
  notRegistered(now: number, refreshMs: number): void {
    if (this.loaded) {
      this.serviceUserId = null;
      this.plan = "none";
      this.config = null;
      this.credits = null;
      this.loaded = false;
      this.periodCost = 0;
      this.tokensByModel = byName();
      this.costByModel = byName();
      this.counters = NO_COUNTERS;
      this.naming = null;
      this.team = null;
      this.memberCounters = NO_COUNTERS;
      this.#memberPlan = null;
      this.models.clear();
      this.#recent = undefined;
      this.sessions.clear(now);
    }
    this.unknown = true;
    this.#refreshAt = now + refreshMs;
  }

  /** A load failed; asked again `retryMs` from now. True when it is the first failure since the last success (warned once per outage). */
  loadFailedAt(now: number, retryMs: number): boolean {
    this.#refreshAt = now + retryMs;
    const first = !this.#loadFailed;
    this.#loadFailed = true;
    return first;
  }

  /** A reload started; cleared when it settles. */
  reloading(p: Promise<void>): Promise<void> {
    const tracked = p.finally(() => {
      this.#refreshing = null;
    });
    this.#refreshing = tracked;
    return tracked;
  }

  /** The view is to be read again within `ms` of `now` (at the user's next call from then), unless sooner already. */
  reloadWithin(now: number, ms: number): void {
    this.#refreshAt = Math.min(this.#refreshAt, now + ms);
  }

  /** The change marker named the user: read once more at the next tick. */
  changed(): void {
    this.#recheck = true;
  }

  /** True once after changed(): the read after the one that raced the change. */
  takeRecheck(): boolean {
    const due = this.#recheck;
    this.#recheck = false;
    return due;
  }

  /**
   * What the credits callbacks have not heard yet (credits.ts): expiries due by `now`, the low
   * mark and 0 crossed. An expiry lowers the cap at once and the view is read again at the next
   * tick for the service's figure.
   */
  creditNews(now: number): CreditsNews[] {
    const c = this.credits;
    if (c === null) return NO_NEWS;
    const { news, expired } = c.news(this.userId, this.periodCost, now);
    if (expired) {
      this.config = withCap(this.config!, c.cap, c.allowance);
      this.#recheck = true;
    }
    return news;
  }

  // ---- calls ----

  /** A reserved call holds its estimate against the limits until committed or released. */
  hold(h: Held): void {
    this.#reservedCost = addDollars(this.#reservedCost, h.cost);
    h.session.reserved = addDollars(h.session.reserved, h.cost);
    if (h.model !== null && h.tokens > 0) this.#reservedTokens[h.model] = (own(this.#reservedTokens, h.model) ?? 0) + h.tokens;
    const limits = this.config?.limits;
    if (limits !== undefined && limits.length > 0) {
      h.limits = limits;
      h.counters = this.counters;
    }
    const team = this.team;
    if (team !== null && team.config !== null) {
      h.team = team;
      team.hold(h.model, h.cost, h.tokens, 1);
      if (team.config.limits.length > 0) {
        h.teamLimits = team.config.limits;
        h.teamCounters = team.counters;
        h.memberCounters = this.memberCounters;
      }
    }
    holdWindows(h, 1);
    this.#inFlight++;
  }

  /** The reserved call ended (committed or released): its estimate is given back. */
  unhold(h: Held): void {
    this.#reservedCost = nonNegative(addDollars(this.#reservedCost, -h.cost));
    h.session.reserved = nonNegative(addDollars(h.session.reserved, -h.cost));
    if (h.model !== null && h.tokens > 0) this.#reservedTokens[h.model] = nonNegative((own(this.#reservedTokens, h.model) ?? 0) - h.tokens);
    h.team?.hold(h.model, h.cost, h.tokens, -1);
    holdWindows(h, -1);
    this.#inFlight--;
  }

  /** The user's recent calls of `model`, undefined before the first one (priced under a plan) ended. */
  recentCalls(model: string | null): RecentCalls | undefined {
    return this.#recent?.get(model ?? "");
  }

  /** A call priced under the user's plan ended: what it cost is what the next calls of the model reserve. */
  called(model: string | null, cost: number, tokens: number): void {
    this.#recent ??= new Map();
    let recent = this.#recent.get(model ?? "");
    if (recent === undefined) {
      if (this.#recent.size >= MODEL_CACHE) this.#recent.clear();
      recent = new RecentCalls();
      this.#recent.set(model ?? "", recent);
    }
    recent.add(cost, tokens);
  }

  /**
   * A call at `at` counted in the period, its session and every window of the plan (one
   * request, its tokens and cost), and for a member in the team's sums and windows and the
   * member's own team windows; money added as whole nano-dollars (rules/money.ts).
   */
  count(session: Session, model: string | null, tokens: number, cost: number, at: number): void {
    this.countPeriod(session, model, tokens, cost);
    this.countWindows(model, tokens, cost, at, at);
    this.countTeam(model, tokens, cost, at, at);
  }

  /**
   * The windows brought to `now`: a calendar window past its end gives way to the next (in the
   * plan's time zone), a rolling one drops what aged out; the team's and the member's team
   * windows too. Each counter is touched only past its next expiry, so a guard between them
   * only compares two numbers per window.
   */
  advanceWindows(now: number): void {
    const plan = this.config;
    if (plan !== null && plan.limits.length > 0) advanceAll(plan, this.counters, now, this, null);
    const team = this.team;
    if (team === null || team.config === null || team.config.limits.length === 0) return;
    this.syncTeam(now);
    team.advanceWindows(now);
    advanceAll(team.config, this.memberCounters, now, team, true);
  }

  /** The billing period as epoch ms. */
  period(): { start: number; end: number } {
    return { start: Date.parse(this.periodStart), end: this.periodEndMs };
  }

  /** A call at `at` counted in every window of the plan whose model matches: one request, its tokens, its cost. */
  countWindows(model: string | null, tokens: number, cost: number, at: number, now: number): void {
    const plan = this.config;
    if (plan === null || plan.limits.length === 0) return;
    this.advanceWindows(now);
    countAll(plan.limits, this.counters, null, model, tokens, cost, at, now);
  }

  /** A member's call at `at` counted for the team (its sums, its scope-`team` windows) and in the member's scope-`member` windows. */
  countTeam(model: string | null, tokens: number, cost: number, at: number, now: number): void {
    const team = this.team;
    if (team === null || team.config === null) return;
    this.syncTeam(now);
    team.count(model, tokens, cost, at, now);
    if (team.config.limits.length === 0) return;
    advanceAll(team.config, this.memberCounters, now, team, true);
    countAll(team.config.limits, this.memberCounters, true, model, tokens, cost, at, now);
  }

  /** Spend and tokens of a call counted in the period and its session (not its windows). */
  countPeriod(session: Session, model: string | null, tokens: number, cost: number): void {
    this.periodCost = addDollars(this.periodCost, cost);
    session.cost = addDollars(session.cost, cost);
    if (model !== null) {
      this.tokensByModel[model] = (own(this.tokensByModel, model) ?? 0) + tokens;
      this.costByModel[model] = addDollars(own(this.costByModel, model) ?? 0, cost);
    }
  }

  /** Tokens counted under the raw model name before the plan was known, moved to the normalized one. */
  renameTokens(raw: string, model: string, tokens: number): void {
    this.tokensByModel[raw] = (own(this.tokensByModel, raw) ?? 0) - tokens;
    if (this.tokensByModel[raw]! <= 0) delete this.tokensByModel[raw];
    this.tokensByModel[model] = (own(this.tokensByModel, model) ?? 0) + tokens;
  }

  /** An event recorded before the plan was known: priced when it is. */
  recordedUnpriced(event: UsageEvent, session: Session): void {
    this.#unpriced.push({ event, session });
  }

  /** Tokens of the events waiting for the plan, by the model name they were counted under. */
  *heldTokens(): Iterable<[string, number]> {
    const sums = new Map<string, number>();
    for (const { event } of this.#unpriced) if (event.model !== null) sums.set(event.model, (sums.get(event.model) ?? 0) + event.total_tokens);
    yield* sums;
  }

  /** The events waiting for the plan, handed over once. */
  takeUnpriced(): { event: UsageEvent; session: Session }[] {
    const out = this.#unpriced;
    this.#unpriced = [];
    return out;
  }

  /** The normalized name of a call's model under the plan in force (remembered); null without one. */
  model(raw: string | null | undefined): string | null {
    if (raw === undefined || raw === null || raw === "") return null;
    if (typeof raw !== "string") throw new MeterTypeError("model must be a string");
    let m = this.models.get(raw);
    if (m === undefined) {
      m = normalizeModel(raw, this.naming);
      if (this.models.size >= MODEL_CACHE) this.models.clear();
      this.models.set(raw, m);
    }
    return m;
  }

  // ---- deliveries and gate events ----

  /** One of the user's events was queued for delivery. */
  queued(): void {
    this.#pending++;
  }

  /** One of the user's events was delivered or discarded. */
  delivered(): void {
    if (this.#pending > 0) this.#pending--;
  }

  /**
   * A gate of kind `key` at `now`: true when its event is to be written (none of the kind
   * within `intervalMs`), with how many of the kind were not written since the last; false
   * (and counted as suppressed) otherwise.
   */
  gateEventDue(key: string, now: number, intervalMs: number): { suppressed: number } | null {
    this.#lastGateEvent ??= new Map();
    const last = this.#lastGateEvent.get(key);
    if (last !== undefined && now - last.at < intervalMs) {
      last.suppressed++;
      return null;
    }
    this.#lastGateEvent.set(key, { at: now, suppressed: 0 });
    return { suppressed: last?.suppressed ?? 0 };
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
      team: this.team === null || this.team.config === null ? null : this.team.snapshot(),
      credits: this.credits === null ? null : { balance: this.credits.balance(this.periodCost), pending: this.credits.pending, low_at: this.credits.lowAt },
    };
  }

  /** Idle: nothing in flight or queued, and no session active within its window. */
  idle(now: number): boolean {
    return this.#inFlight === 0 && this.#pending === 0 && this.sessions.idle(now, this.timeoutMs);
  }
}

/** A reserved call's amounts added to (sign 1) or taken from (-1) what its windows' counters hold: the plan's, the team plan's (the team's or the member's by scope). */
function holdWindows(h: Held, sign: 1 | -1): void {
  if (h.limits !== undefined && h.counters !== undefined) holdOn(h, h.limits, h.counters, null, sign);
  if (h.teamLimits !== undefined && h.teamCounters !== undefined) holdOn(h, h.teamLimits, h.teamCounters, h.memberCounters ?? null, sign);
}

function holdOn(h: Held, limits: readonly PlanLimit[], counters: readonly LimitCounter[], memberCounters: readonly LimitCounter[] | null, sign: 1 | -1): void {
  for (let i = 0; i < limits.length; i++) {
    const l = limits[i]!;
    if (l.model != null && l.model !== h.model) continue;
    const c = memberCounters !== null && memberScoped(l) ? memberCounters[i] : counters[i];
    if (c === undefined) continue;
    const amount = l.metric === "spend" ? unitOf("spend", h.cost) : l.metric === "tokens" ? h.tokens : 1;
    c.held = Math.max(0, c.held + sign * amount);
  }
}

function nonNegative(x: number): number {
  return x < 0 ? 0 : x;
}
