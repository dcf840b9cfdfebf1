/** The client: session views, guards, reservations, metering and delivery. */
import { randomUUID } from "node:crypto";
import { currentSession, currentUser, runWithUser } from "./context.ts";
import { LimitExceededError, MeterApiError, MeterError, MeterTypeError } from "./errors.ts";
import { evaluate } from "./gates.ts";
import { estimateTokens, rateOf, tokenCost, toolsCost } from "./pricing.ts";
import { Leases, type LeaseNeed } from "./leases.ts";
import { own } from "./own.ts";
import { EventQueue } from "./queue.ts";
import { Reporter } from "./reporting.ts";
import { Reservation, type Hold, type Ledger } from "./reservation.ts";
import type { Session } from "./sessions.ts";
import { UserEntry } from "./state.ts";
import { Transport, backoffMs, retryable, type Changes } from "./transport.ts";
import type {
  CallInput,
  GateContext,
  GateEvent,
  GuardInput,
  GuardResult,
  ManualEvent,
  ManualInput,
  MeterOptions,
  MeterStats,
  RecordInput,
  SessionStartState,
  StartResult,
  UsageEvent,
  UsageInput,
  UserState,
} from "./types.ts";
import { checkManual, checkUsage, checkUser, positiveInt } from "./validate.ts";

/**
 * One gate event per (user, gate_reason, status) per this many ms at most, status being soft,
 * hard, or hard and blocked: a hard gate is never hidden behind the soft gate before it.
 */
const GATE_EVENT_INTERVAL_MS = 5_000;
/** Retry delay of a session load that failed (capped by refreshIntervalMs). */
const LOAD_RETRY_MS = 5_000;
/** Attempts of a manual event before its error reaches the caller. */
const MANUAL_ATTEMPTS = 3;
/** Distinct model names remembered per user (normalization cache). */
const MODEL_CACHE = 256;
/** Manual event ids remembered, so that a repeated idempotency key is not counted twice locally. */
const MANUAL_IDS = 10_000;
/** The gate reason of a user held back by `failClosed`; no gate event is written for it (the service could not take one). */
const SESSION_UNAVAILABLE = "session_unavailable";

type GateCallback = (result: GuardResult, ctx: GateContext) => unknown;

let reserveNowOf: (meter: Meter, userId: string, input?: GuardInput) => Reservation | undefined;
let reporterOfMeter: (meter: Meter) => Reporter;

/**
 * The integrations reserve on every model call: reserve() in the caller's tick when nothing
 * has to be waited for (the user's view is loaded and current, and no lease has to be asked
 * for), so a warm user costs them no promise. Undefined otherwise: then reserve(). Throws what
 * reserve() rejects with. Internal (src/internal.ts), not part of the API.
 */
export function reserveNow(meter: Meter, userId: string, input: GuardInput = {}): Reservation | undefined {
  return reserveNowOf(meter, userId, input);
}

/** Where the integrations report what they could not do: the meter's logger and onError. Internal. */
export function reporterOf(meter: Meter): Reporter {
  return reporterOfMeter(meter);
}

export class Meter {
  readonly blocking: boolean;
  private readonly flushIntervalMs: number;
  private readonly refreshIntervalMs: number;
  private readonly startupTimeoutMs: number;
  private readonly shutdownTimeoutMs: number;
  private readonly failClosed: boolean;
  readonly #report: Reporter;
  /** The product's change marker last seen (GET /config/changes); undefined until the first answer. */
  private marker: number | undefined;
  private pollingChanges = false;
  /** The change route answered 404 (a service from before it, or a wrong address): asked again only after this (ms). */
  private changesRetryAt = 0;
  private readonly transport: Transport;
  private readonly queue: EventQueue;
  private readonly users = new Map<string, UserEntry>();
  private readonly loading = new Map<string, Promise<UserEntry>>();
  private readonly manualIds = new Set<string>();
  /** Queued usage events waiting for their user's prices. */
  private readonly unpriced = new WeakSet<UsageEvent>();
  private readonly softGate: GateCallback[] = [];
  private readonly hardGate: GateCallback[] = [];
  private readonly usage: ((event: UsageEvent) => unknown)[] = [];
  private readonly sessionStart: ((state: SessionStartState) => unknown)[] = [];
  private readonly closing: (() => void)[] = [];
  private readonly timers: ReturnType<typeof setInterval>[];
  /** Budget leases (`leases: true`), else null. */
  private readonly leases: Leases | null;

  constructor(options: MeterOptions = {}) {
    const apiKey = options.apiKey ?? process.env.METER_API_KEY;
    const baseURL = options.baseURL ?? process.env.METER_BASE_URL;
    if (!apiKey) throw new MeterTypeError("Meter: apiKey is required (or set METER_API_KEY)");
    if (!baseURL) throw new MeterTypeError("Meter: baseURL is required (or set METER_BASE_URL), e.g. https://meter.example.com/api/v1");
    // Every option is checked before the address, whose check a test of another option's must not meet first.
    const leaseOptions = options.leases ? leaseSettings(options) : null;
    if (!/^https?:\/\//.test(baseURL)) throw new MeterTypeError(`Meter: baseURL must be an http(s) URL, got ${baseURL}`);
    if (/^https?:\/\/[^/]+\/?$/.test(baseURL)) {
      throw new MeterTypeError(`Meter: baseURL ${baseURL} has no path; the API is served under /api/v1: use ${baseURL.replace(/\/?$/, "/api/v1")}`);
    }
    this.blocking = options.blocking ?? true;
    this.flushIntervalMs = positiveInt("flushIntervalMs", options.flushIntervalMs, 5_000);
    this.refreshIntervalMs = positiveInt("refreshIntervalMs", options.refreshIntervalMs, 60_000);
    this.startupTimeoutMs = positiveInt("startupTimeoutMs", options.startupTimeoutMs, 3_000);
    this.shutdownTimeoutMs = positiveInt("shutdownTimeoutMs", options.shutdownTimeoutMs, 10_000);
    const maxQueueSize = positiveInt("maxQueueSize", options.maxQueueSize, 10_000);
    const maxBatchSize = Math.min(positiveInt("maxBatchSize", options.maxBatchSize, 1_000), 10_000);
    const requestTimeoutMs = positiveInt("requestTimeoutMs", options.requestTimeoutMs, 10_000);
    this.failClosed = options.failClosed ?? false;
    this.#report = new Reporter(options.logger ?? console, options.onError, this.failClosed);
    this.transport = new Transport(baseURL, apiKey, requestTimeoutMs);
    this.queue = new EventQueue(this.transport, maxQueueSize, maxBatchSize, {
      delivered: (events, kind) => {
        for (const e of events) {
          if (kind === "usage") (e as UsageEvent).synced = true;
          this.settled(e.user_id);
        }
      },
      discarded: (events) => {
        for (const e of events) this.settled(e.user_id);
      },
      held: (e) => this.unpriced.has(e as UsageEvent),
      stalled: (userIds) => {
        for (const id of userIds) {
          const e = this.users.get(id);
          if (e && e.refreshing === null) void this.reload(e, undefined);
        }
      },
      warn: (message, err) => this.#report.warn(message, err),
      misaddressed: (err) => this.#report.misaddressed(err),
    });
    this.leases = leaseOptions ? new Leases(this.transport, leaseOptions, (m, err) => this.#report.warn(m, err)) : null;
    // Timers never keep the process alive.
    this.timers = [
      setInterval(() => {
        this.queue.tick(Date.now());
        void this.pollChanges();
      }, this.flushIntervalMs),
      setInterval(() => this.sweep(Date.now()), Math.min(60_000, this.refreshIntervalMs)),
    ];
    for (const t of this.timers) t.unref();
  }

  /**
   * Checks, within startupTimeoutMs each, that the service answers (GET /health) and that it
   * accepts the API key (GET /config/changes, which also gives the change marker). Never
   * throws: a refused key or a wrong baseURL is logged as an error and sent to onError; when
   * the service is down the library fails open (or closed, with failClosed).
   */
  async start(): Promise<StartResult> {
    // Both at once: a busy service answers within startupTimeoutMs, not twice that.
    const [health, key] = await Promise.all([
      this.transport.health(this.startupTimeoutMs),
      this.transport.changes(undefined, this.startupTimeoutMs).catch((err: Error) => err),
    ]);
    // The health check decides: a slow key check does not make users' first loads skip their wait.
    this.transport.reachable = health === "ok" || health === "degraded";
    if (health === "not_found") {
      this.#report.misaddressed(await this.wrongAddress());
      return { healthy: false, authenticated: false };
    }
    if (health === "unreachable") {
      this.#report.warn(`the service did not answer a health check at ${this.transport.base}/health within ${this.startupTimeoutMs} ms; ${this.#report.fallback()} until it does`);
      return { healthy: false, authenticated: false };
    }
    if (health === "degraded") this.#report.warn("the service answers but reports its database unreachable; sessions may not load");
    if (key instanceof Error) {
      if (key instanceof MeterApiError && (key.status === 401 || key.status === 403)) this.#report.keyRefused(key);
      else this.#report.warn("the API key could not be checked", key);
      return { healthy: health === "ok", authenticated: false };
    }
    this.marker = key.marker;
    return { healthy: health === "ok", authenticated: true };
  }

  /** Reloads the user's session view now (plan, caps, usage), as a plan change does; the user's state after it. */
  async refresh(userId: string): Promise<UserState> {
    checkUser(userId);
    const e = this.users.get(userId);
    if (e === undefined) return (await this.load(userId)).snapshot(Date.now());
    // A reload already under way may have been sent before the change the caller knows of.
    if (e.refreshing) await e.refreshing;
    this.leases?.renew(userId);
    await this.reload(e, this.startupTimeoutMs);
    return e.snapshot(Date.now());
  }

  onSoftGate(cb: (result: GuardResult, ctx: GateContext) => unknown): void {
    this.softGate.push(cb);
  }
  onHardGate(cb: (result: GuardResult, ctx: GateContext) => unknown): void {
    this.hardGate.push(cb);
  }
  onUsage(cb: (event: UsageEvent) => unknown): void {
    this.usage.push(cb);
  }
  onSessionStart(cb: (state: SessionStartState) => unknown): void {
    this.sessionStart.push(cb);
  }
  /**
   * Runs `cb` when shutdown() starts, before its final delivery: what is still open then (a
   * model call whose stream its reader left) is recorded now rather than lost with the process.
   */
  onShutdown(cb: () => unknown): void {
    this.closing.push(cb);
  }

  /** Checks a coming call against the user's plan. Throws LimitExceededError on a hard gate when blocking. */
  async guard(userId: string, input: GuardInput = {}): Promise<GuardResult> {
    checkUser(userId);
    const e = this.ready(userId) ?? (await this.load(userId));
    return this.admit(e, input, false) as GuardResult;
  }

  /** guard() and, with pre_call_estimate, the estimated cost held against the limits in the same step. */
  async reserve(userId: string, input: GuardInput = {}): Promise<Reservation> {
    const now = this.#reserveNow(userId, input);
    if (now) return now;
    const e = this.ready(userId) ?? (await this.load(userId));
    input = this.sized(e, input);
    const lease = this.leases && this.leaseNeed(e, input);
    // The lease does not cover the estimate: wait for it (bounded, see Leases.wait); the check and the hold below are one synchronous step.
    if (lease && !this.leases!.covers(e, lease)) await this.leases!.wait(e, lease);
    return this.admit(e, input, true) as Reservation;
  }

  /**
   * reserve() in the same tick when nothing has to be waited for (the user's view is
   * loaded and current, and no lease has to be asked for): the integrations reserve on every
   * model call, and a warm user should cost them no promise. Undefined otherwise: then
   * reserve(). Throws what reserve() rejects with.
   */
  #reserveNow(userId: string, input: GuardInput = {}): Reservation | undefined {
    checkUser(userId);
    const e = this.ready(userId);
    if (e === undefined) return undefined;
    if (this.leases) {
      input = this.sized(e, input);
      const lease = this.leaseNeed(e, input);
      if (lease && !this.leases.covers(e, lease)) return undefined;
    }
    return this.admit(e, input, true) as Reservation;
  }

  /** Meters a call that already ran. */
  async record(userId: string, input: RecordInput = {}): Promise<UsageEvent> {
    checkUser(userId);
    checkUsage(input);
    const e = this.ready(userId) ?? (await this.load(userId));
    const now = Date.now();
    const session = e.sessions.at(sessionOf(userId, input.session_id), now, e.timeoutMs);
    return this.meter(e, session, this.model(e, input.model), input, input.metadata, now);
  }

  /**
   * reserve(), then `fn`, then commit with `input.usage(out)`. When `fn` (or `usage`) throws,
   * nothing is recorded, the reservation is released and the error rethrown.
   */
  async call<T>(userId: string, input: CallInput, fn: () => T | Promise<T>): Promise<T> {
    if (typeof input?.usage !== "function") throw new MeterTypeError("call: input.usage must be a function (out) => ({ input_tokens, output_tokens, tool_calls })");
    const r = await this.reserve(userId, input);
    try {
      const out = await fn();
      const used = input.usage(out);
      await r.commit({ ...used, metadata: used?.metadata ?? input.metadata });
      return out;
    } catch (err) {
      // Also when commit refuses what usage() returned: nothing stays held.
      r.release();
      throw err;
    }
  }

  /** POST /events: a manual event, priced by the service unless `cost` is given. Retried on transient failures. */
  async recordManual(userId: string, input: ManualInput = {}): Promise<ManualEvent> {
    checkUser(userId);
    checkManual(input);
    const body: Record<string, unknown> = { user_id: userId, idempotency_key: input.idempotency_key ?? randomUUID() };
    for (const k of ["cost", "model", "input_tokens", "output_tokens", "description", "tool_calls", "metadata", "session_id"] as const) {
      if (input[k] !== undefined) body[k] = input[k];
    }
    const sessionId = sessionOf(userId, input.session_id);
    if (sessionId) body.session_id = sessionId;
    let created: ManualEvent;
    for (let attempt = 1; ; attempt++) {
      try {
        created = await this.transport.request<ManualEvent>("POST", "/events", body);
        break;
      } catch (err) {
        if (!retryable(err) || attempt >= MANUAL_ATTEMPTS) throw err;
        await sleep(backoffMs(attempt, err));
      }
    }
    const fresh = !this.manualIds.has(created.id);
    if (fresh) {
      if (this.manualIds.size >= MANUAL_IDS) this.manualIds.clear();
      this.manualIds.add(created.id);
    }
    const now = Date.now();
    const e = this.users.get(userId);
    const session = e?.sessions.at(sessionOf(userId, input.session_id), now, e.timeoutMs);
    const inTokens = input.input_tokens ?? 0;
    const outTokens = input.output_tokens ?? 0;
    if (e && session && fresh) e.count(session, created.model, inTokens + outTokens, created.cost);
    const event: UsageEvent = {
      id: created.id,
      user_id: userId,
      session_id: session?.id ?? sessionOf(userId, input.session_id) ?? null,
      timestamp: created.created_at,
      model: created.model,
      input_tokens: inTokens,
      output_tokens: outTokens,
      total_tokens: inTokens + outTokens,
      tool_calls: input.tool_calls ?? [],
      cost_tokens: created.cost,
      cost_tools: 0,
      cost_total: created.cost,
      metadata: input.metadata ?? {},
      synced: true,
    };
    if (fresh) this.fire(this.usage, event);
    return created;
  }

  /** The user's cached state; undefined before the first guard/record for the user. */
  state(userId: string): UserState | undefined {
    return this.users.get(userId)?.snapshot(Date.now());
  }

  /**
   * Runs `fn` with `userId` as the current user of its async context (see currentUser()) and,
   * with `session_id`, that session as the default of every call for the user inside it: one
   * wrapped model client then serves many conversations, each with its own session cap.
   */
  withUser<T>(userId: string, fn: () => T, options: { session_id?: string | null } = {}): T {
    checkUser(userId);
    const sessionId = options?.session_id ?? undefined;
    if (sessionId !== undefined && (typeof sessionId !== "string" || sessionId.length === 0 || sessionId.length > 255)) {
      throw new MeterTypeError("withUser: session_id must be a string of 1 to 255 characters");
    }
    return runWithUser(userId, sessionId, fn);
  }

  /** The user set by the enclosing withUser(), or undefined. */
  currentUser(): string | undefined {
    return currentUser();
  }

  get stats(): MeterStats {
    const q = this.queue;
    const stats: MeterStats = { queued: q.size, sent: q.sent, dropped: q.dropped, rejected: q.rejected, users: this.users.size };
    if (this.leases) stats.lease_requests = this.leases.requests;
    return stats;
  }

  /** Delivers what is queued, retrying transient failures for up to `timeoutMs` (default shutdownTimeoutMs). True when the queue emptied. */
  flush(options: { timeoutMs?: number } = {}): Promise<boolean> {
    return this.queue.drain(Date.now() + (options.timeoutMs ?? this.shutdownTimeoutMs));
  }

  /** Stops the timers and delivers what is queued (up to shutdownTimeoutMs). Call it last. */
  async shutdown(options: { timeoutMs?: number } = {}): Promise<boolean> {
    for (const t of this.timers) clearInterval(t);
    // Calls still open are recorded first, so that what they spent leaves the lease before it is given back.
    this.fire(this.closing, undefined);
    await this.leases?.releaseAll();
    const drained = await this.flush(options);
    if (!drained) this.#report.warn(`shutdown: ${this.queue.size} events could not be delivered`);
    return drained;
  }

  static {
    reserveNowOf = (meter, userId, input) => meter.#reserveNow(userId, input);
    reporterOfMeter = (meter) => meter.#report;
  }

  // ---- what reservations settle through ----

  /** What a Reservation commits and releases through: not on the class, so not part of the API. */
  readonly #ledger: Ledger = {
    settle: (hold, used) => this.#settle(hold, used),
    unhold: (hold) => this.#unhold(hold),
  };

  /** Reservation.commit(). */
  #settle(hold: Hold, used: UsageInput): UsageEvent {
    checkUsage(used);
    this.#unhold(hold);
    const now = Date.now();
    return this.meter(hold.entry, hold.session, hold.model, used, used.metadata ?? hold.metadata, now);
  }

  /** Reservation.release(). */
  #unhold(hold: Hold): void {
    const e = hold.entry;
    e.unhold(hold);
    this.leases?.unhold(e.userId, hold.lease ?? null, hold.cost, hold.model, hold.tokens);
  }

  // ---- internals ----

  /** The user's entry when it can be used as is (loaded, period not over); schedules a due reload. */
  private ready(userId: string): UserEntry | undefined {
    const e = this.users.get(userId);
    if (e === undefined) return undefined;
    const now = Date.now();
    if (now >= e.periodEndMs) return undefined;
    if (now >= e.refreshAt && e.refreshing === null) void this.reload(e, undefined);
    return e;
  }

  /** First load (shared by concurrent callers) or period rollover. */
  private load(userId: string): Promise<UserEntry> {
    const cached = this.users.get(userId);
    if (cached) return this.rollover(cached);
    let p = this.loading.get(userId);
    if (!p) {
      p = this.firstLoad(userId).finally(() => this.loading.delete(userId));
      this.loading.set(userId, p);
    }
    return p;
  }

  /**
   * Waits for the session view up to startupTimeoutMs, and not at all while the service is
   * known to be unreachable: then the user starts with permissive defaults and the view is
   * applied when it arrives.
   */
  private async firstLoad(userId: string): Promise<UserEntry> {
    const e = new UserEntry(userId, Date.now());
    const loaded = this.reload(e, this.startupTimeoutMs);
    if (this.transport.reachable) await loaded;
    this.users.set(userId, e);
    return e;
  }

  /** The period ended: reload; if the service gives no new period, clear counters locally. */
  private async rollover(e: UserEntry): Promise<UserEntry> {
    const loaded = this.reload(e, this.startupTimeoutMs);
    if (this.transport.reachable) await loaded;
    const now = Date.now();
    if (now >= e.periodEndMs) e.rollOver(now);
    return e;
  }

  /** Reloads the user's session view (one request at a time per user); never rejects. */
  private reload(e: UserEntry, timeoutMs: number | undefined): Promise<void> {
    if (e.refreshing) return e.refreshing;
    const wasReachable = this.transport.reachable;
    return e.reloading(this.transport
      .getSession(e.userId, timeoutMs)
      .then(
        (view) => {
          const now = Date.now();
          const { first } = e.apply(view, now, this.refreshIntervalMs);
          this.price(e);
          if (first) {
            this.fire(this.sessionStart, { user_id: e.userId, plan: e.plan, billing_period: { start: e.periodStart, end: e.periodEnd } });
          }
        },
        (err: Error) => {
          const now = Date.now();
          if (err instanceof MeterApiError && err.status === 404) {
            // Not registered (or deleted): permissive defaults; its events are still sent.
            e.notRegistered(now, this.refreshIntervalMs);
            // No plan: the held events keep their zero cost.
            this.price(e);
            return;
          }
          const firstFailure = e.loadFailedAt(now, Math.min(LOAD_RETRY_MS, this.refreshIntervalMs));
          if (err instanceof MeterApiError && (err.status === 401 || err.status === 403)) this.#report.keyRefused(err);
          // Once per user and outage: a long outage must not flood the log.
          else if (wasReachable && firstFailure) this.#report.warn(`loading the session of ${e.userId} failed; ${e.loaded ? "its cached view is used" : this.#report.fallback()} until it loads`, err);
        },
      ));
  }

  /** The check of guard()/reserve(): synchronous from here on, so check and hold are one step. */
  private admit(e: UserEntry, input: GuardInput, hold: boolean): GuardResult | Reservation {
    checkEstimateInput(input);
    const now = Date.now();
    const plan = e.config;
    const model = this.model(e, input.model);
    const session = e.sessions.at(sessionOf(e.userId, input.session_id), now, e.timeoutMs);
    const { cost, tokens } = this.estimate(e, model, input);
    let result = evaluate(plan, {
      periodCost: e.periodCost + e.reservedCost,
      sessionCost: session.cost + session.reserved,
      model,
      modelTokens: model === null ? 0 : (own(e.tokensByModel, model) ?? 0) + (own(e.reservedTokens, model) ?? 0),
      estimateCost: cost,
      estimateTokens: tokens,
    });
    if (this.failClosed && !e.loaded && !e.unknown) result = unavailable(e.userId);
    let lease: string | null = null;
    const need = hold && result.status !== "hard_gate" && this.leases ? this.leases.need(e, model, cost, tokens) : null;
    if (need) {
      const taken = this.leases!.take(e, need);
      if ("refused" in taken) result = taken.refused;
      else lease = taken.leaseId;
    }
    if (result.status !== "ok") this.gated(e, session, model, result, input.metadata, now);
    if (!hold) return result;
    e.hold({ session, model, cost, tokens });
    return new Reservation(this.#ledger, { entry: e, session, model, cost, tokens, metadata: input.metadata, lease }, result);
  }

  /** With leases, the input with its estimate: the lease's need and the check both read it, so the prompt is sized once. */
  private sized(e: UserEntry, input: GuardInput): GuardInput {
    if (!this.leases || input.input_tokens !== undefined || !e.config?.pre_call_estimate) return input;
    return { ...input, input_tokens: estimateTokens(input.prompt) };
  }

  /** What a reserved call needs from the user's lease, or null when leases do not apply to it. */
  private leaseNeed(e: UserEntry, input: GuardInput): LeaseNeed | null {
    checkEstimateInput(input);
    const model = this.model(e, input.model);
    const { cost, tokens } = this.estimate(e, model, input);
    return this.leases!.need(e, model, cost, tokens);
  }

  /** With pre_call_estimate: the call's estimated cost and tokens (input plus the output buffer). */
  private estimate(e: UserEntry, model: string | null, input: GuardInput): { cost: number; tokens: number } {
    const plan = e.config;
    if (plan === null || !plan.pre_call_estimate) return { cost: 0, tokens: 0 };
    const inTokens = input.input_tokens ?? estimateTokens(input.prompt);
    return { cost: tokenCost(inTokens, plan.pre_call_buffer_tokens, rateOf(model, plan)), tokens: inTokens + plan.pre_call_buffer_tokens };
  }

  /** A soft or hard gate: gate event (rate-limited), callbacks, then the error when blocking. */
  private gated(e: UserEntry, session: Session, model: string | null, result: GuardResult, metadata: Record<string, unknown> | undefined, now: number): void {
    const hard = result.status === "hard_gate";
    const blocked = hard && this.blocking;
    const reason = result.gate_reason!;
    // A session cap is a cap per session: two conversations at their caps are two gates.
    const key = `${hard ? (blocked ? "blocked" : "hard_gate") : "soft_gate"} ${reason}${reason === "session_spend" ? ` ${session.id}` : ""}`;
    // Not the service's to record when the session is unavailable: it could not be reached, or refused the key.
    const due = reason === SESSION_UNAVAILABLE ? null : e.gateEventDue(key, now, GATE_EVENT_INTERVAL_MS);
    if (due) {
      // How many gates of this kind were not written since the last event of it.
      const suppressed = due.suppressed;
      const event: GateEvent = {
        id: randomUUID(),
        user_id: e.userId,
        service_user_id: e.serviceUserId,
        session_id: session.id,
        timestamp: new Date(now).toISOString(),
        status: hard ? "hard_gate" : "soft_gate",
        gate_reason: reason,
        usage_pct: result.usage_pct,
        current_value: result.current_value,
        limit_value: result.limit_value,
        model,
        blocked,
        message: result.message,
        metadata: suppressed > 0 ? { ...metadata, suppressed_events: suppressed } : (metadata ?? {}),
      };
      if (this.queue.push("gate", event)) e.queued();
    }
    const ctx: GateContext = { user_id: e.userId, session_id: session.id, model };
    for (const cb of hard ? this.hardGate : this.softGate) this.safely(() => cb(result, ctx));
    if (blocked) throw new LimitExceededError(result, resetsAt(e, session, reason));
  }

  /**
   * One flush tick: asks the service what changed since the marker last seen (one request per
   * client, whatever the number of users) and reloads only the users a plan update or a
   * subscription change concerns, so a change reaches every running client within
   * flushIntervalMs. Users named by the previous answer are read once more here: a read that
   * raced the change (another replica's short caches) may have been stale.
   */
  private async pollChanges(): Promise<void> {
    if (this.pollingChanges || Date.now() < this.changesRetryAt) return;
    if (this.users.size === 0 && this.marker !== undefined) return;
    for (const e of this.users.values()) {
      if (e.takeRecheck()) void this.reload(e, undefined);
    }
    this.pollingChanges = true;
    try {
      const since = this.marker;
      const c: Changes = await this.transport.changes(since);
      if (this.marker !== since) return;
      // No marker before this answer (start() not called, or it failed): every cached view may predate a change.
      const all = since === undefined || c.all;
      const plans = new Set(c.plan_ids);
      const users = new Set(c.user_ids);
      for (const e of this.users.values()) {
        if (all || users.has(e.userId) || (e.planId !== null && plans.has(e.planId))) {
          e.changed();
          this.leases?.renew(e.userId);
          void this.reload(e, undefined);
        }
      }
      this.marker = c.marker;
    } catch (err) {
      if (err instanceof MeterApiError && (err.status === 401 || err.status === 403)) {
        this.#report.keyRefused(err);
      } else if (err instanceof MeterApiError && err.status === 404) {
        // A service from before the change marker (or a wrong baseURL, which deliveries report).
        if (this.changesRetryAt === 0) this.#report.warn(`GET /config/changes answered 404; until it answers, plan changes reach this process only by its periodic reloads (refreshIntervalMs ${this.refreshIntervalMs} ms)`, err);
        this.changesRetryAt = Date.now() + this.refreshIntervalMs;
      }
      // Network errors and 5xx: the next tick asks again; deliveries report the outage.
    } finally {
      this.pollingChanges = false;
    }
  }

  /** Why nothing of the API answers at baseURL, with the address to use when it can be found. */
  private async wrongAddress(): Promise<MeterError> {
    const base = this.transport.base;
    const there = /\/api\/v1$/.test(base) ? "not_found" : await this.transport.health(this.startupTimeoutMs, `${base}/api/v1`);
    const hint = there === "ok" || there === "degraded"
      ? `the API answers at ${base}/api/v1: set baseURL (or METER_BASE_URL) to that`
      : "baseURL (or METER_BASE_URL) must be the service's address including /api/v1, e.g. https://meter.example.com/api/v1";
    return new MeterError(`nothing of the Meter API answers at ${base} (GET ${base}/health: 404); ${hint}. Until it is fixed, no event is delivered and ${this.#report.fallback()}`);
  }

  /** Prices, counts and queues one call's usage. */
  private meter(e: UserEntry, session: Session, model: string | null, used: UsageInput, metadata: Record<string, unknown> | undefined, now: number): UsageEvent {
    const inTokens = used.input_tokens ?? 0;
    const outTokens = used.output_tokens ?? 0;
    const tools = used.tool_calls ?? [];
    const plan = e.config;
    const cost_tokens = tokenCost(inTokens, outTokens, rateOf(model, plan));
    const cost_tools = toolsCost(tools, plan);
    const event: UsageEvent = {
      id: randomUUID(),
      user_id: e.userId,
      session_id: session.id,
      timestamp: new Date(now).toISOString(),
      model,
      input_tokens: inTokens,
      output_tokens: outTokens,
      total_tokens: inTokens + outTokens,
      tool_calls: [...tools],
      cost_tokens,
      cost_tools,
      cost_total: cost_tokens + cost_tools,
      metadata: metadata ?? {},
      synced: false,
    };
    const lease = this.leases?.spend(e.userId, event.cost_total, model, event.total_tokens);
    if (lease) event.lease_id = lease;
    e.count(session, model, event.total_tokens, event.cost_total);
    if (this.queue.push("usage", event)) {
      e.queued();
      if (!e.loaded && !e.unknown) {
        // The service has not answered yet: priced (and held back) until it does.
        e.recordedUnpriced(event, session);
        this.unpriced.add(event);
      }
    }
    this.fire(this.usage, event);
    return event;
  }

  /** Prices the usage recorded before the plan was known, now that it is (or the user has none). */
  private price(e: UserEntry): void {
    const plan = e.config;
    for (const { event, session } of e.takeUnpriced()) {
      this.unpriced.delete(event);
      if (plan === null) continue;
      const model = this.model(e, event.model);
      if (event.model !== null && model !== event.model) {
        // Counted under the raw name while the plan was unknown.
        e.renameTokens(event.model, model!, event.total_tokens);
      }
      event.model = model;
      event.cost_tokens = tokenCost(event.input_tokens, event.output_tokens, rateOf(model, plan));
      event.cost_tools = toolsCost(event.tool_calls, plan);
      event.cost_total = event.cost_tokens + event.cost_tools;
      e.count(session, model, 0, event.cost_total);
    }
  }

  /** Normalized model name under the user's plan (cached per user). */
  private model(e: UserEntry, raw: string | null | undefined): string | null {
    if (raw === undefined || raw === null || raw === "") return null;
    if (typeof raw !== "string") throw new MeterTypeError("model must be a string");
    return e.modelName(raw, MODEL_CACHE);
  }

  private settled(userId: string): void {
    this.users.get(userId)?.delivered();
  }

  /** Drops idle users (session expired, nothing in flight or queued) and stale caller sessions. */
  private sweep(now: number): void {
    for (const [id, e] of this.users) {
      e.sessions.prune(now, e.timeoutMs);
      if (e.refreshing === null && e.idle(now)) this.users.delete(id);
    }
  }

  private fire<A>(cbs: ((arg: A) => unknown)[], arg: A): void {
    for (const cb of cbs) this.safely(() => cb(arg));
  }

  /** A callback that throws or rejects stops neither the others nor the call. */
  private safely(fn: () => unknown): void {
    try {
      const r = fn();
      if (r && typeof (r as Promise<unknown>).then === "function") {
        (r as Promise<unknown>).then(undefined, (err: Error) => this.#report.warn("a callback rejected", err));
      }
    } catch (err) {
      this.#report.warn("a callback threw", err as Error);
    }
  }
}

function leaseSettings(o: MeterOptions) {
  const fallback = o.leaseFallback ?? "slice";
  if (fallback !== "slice" && fallback !== "open") throw new MeterTypeError(`Meter: leaseFallback must be "slice" or "open", got ${String(fallback)}`);
  return {
    ttlMs: positiveInt("leaseTtlMs", o.leaseTtlMs, 60_000),
    callsPerLease: positiveInt("leaseCalls", o.leaseCalls, 40),
    idleMs: positiveInt("leaseIdleMs", o.leaseIdleMs, 10_000),
    fallback,
  } as const;
}

/** The call's session: the one it names, else the enclosing withUser()'s for this user, else the library's own (undefined). */
function sessionOf(userId: string, given: string | null | undefined): string | null | undefined {
  if (given !== undefined) return given;
  return currentUser() === userId ? currentSession() : undefined;
}

/** When the limit behind `reason` lifts by itself, where known. */
function resetsAt(e: UserEntry, session: Session, reason: string): Date | null {
  if (reason === SESSION_UNAVAILABLE) return null;
  if (reason === "session_spend") return session === e.sessions.own ? new Date(session.startedAt + e.timeoutMs) : null;
  return new Date(e.periodEndMs);
}

/** The hard gate of a user whose session could not be loaded, under failClosed. */
function unavailable(userId: string): GuardResult {
  return {
    status: "hard_gate",
    gate_reason: SESSION_UNAVAILABLE,
    usage_pct: 0,
    current_value: 0,
    limit_value: 0,
    message: `The session of ${userId} could not be loaded (service unreachable or API key refused); failClosed blocks the call`,
  };
}

function checkEstimateInput(input: GuardInput): void {
  if (input.input_tokens !== undefined && !isCount(input.input_tokens)) throw new MeterTypeError("input_tokens must be a non-negative integer");
}

function isCount(x: unknown): boolean {
  return Number.isSafeInteger(x) && (x as number) >= 0;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
