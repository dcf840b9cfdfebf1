/**
 * The client: the one public class. It checks its options and delegates: users' state to
 * Users (users.ts, entries in state.ts), the check of a call to Admission (admission.ts), what
 * calls used to Recorder (recording.ts), delivery to EventQueue (queue.ts), budget leases to
 * Leases (leases.ts), callbacks to Callbacks (callbacks.ts), problems to Reporter (reporting.ts).
 */
import { randomUUID } from "node:crypto";
import { Admission } from "./admission.ts";
import { Callbacks } from "./callbacks.ts";
import { now as clockNow } from "./clock.ts";
import { currentUser, runWithUser, sessionOf } from "./context.ts";
import { MeterApiError, MeterAuthenticationError, MeterError, MeterEventsDroppedError, MeterTypeError } from "./errors.ts";
import { Leases } from "./leases.ts";
import { EventQueue } from "./queue.ts";
import { Recorder, postManual } from "./recording.ts";
import { Reporter } from "./reporting.ts";
import type { Hold, Ledger, Reservation } from "./reservation.ts";
import { addressHint, likelyBases, Transport } from "./transport.ts";
import type {
  CallInput,
  CreditsEvent,
  GateContext,
  GuardInput,
  GuardResult,
  ManualEvent,
  ManualInput,
  MeterOptions,
  MeterStats,
  PortalToken,
  PortalTokenOptions,
  RecordInput,
  SessionStartState,
  StartResult,
  UsageEvent,
  UsageInput,
  UserState,
} from "./types.ts";
import { Users } from "./users.ts";
import { checkManual, checkPortalTtl, checkUsage, checkUser, callTimeoutMs, durationMs, flag, positiveInt, withinChars } from "./validate.ts";

let reserveNowOf: (meter: Meter, userId: string, input?: GuardInput) => Reservation | undefined;
let reporterOfMeter: (meter: Meter) => Reporter;

/** Events a batch request carries at most: the service's limit. */
const MAX_BATCH = 10_000;

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

/**
 * Meters not shut down yet. A script or worker that ends without shutdown() still delivers what
 * they queued: when Node's event loop runs empty ("beforeExit", as Python's atexit), each is shut
 * down, bounded by its shutdownTimeoutMs. process.exit() and signals skip it: call shutdown() there.
 */
const unshut = new Set<Meter>();
let exitHooked = false;
function deliverAtExit(meter: Meter): void {
  unshut.add(meter);
  if (exitHooked || typeof process === "undefined" || typeof process.on !== "function") return;
  exitHooked = true;
  // Fires again once these shutdowns are done; by then the set is empty and the process ends.
  process.on("beforeExit", () => {
    // Over a copy: a meter that registers again meanwhile waits for the next beforeExit.
    for (const m of [...unshut]) void m.shutdown();
  });
}

/**
 * The client of one product's metering: checks each model call against its user's plan before
 * it runs (`guard`, `reserve`, the model-client wrappers), records usage and gate events and
 * delivers them in batches. One per process; options in `MeterOptions` (the API key and address
 * default to `METER_API_KEY` and `METER_BASE_URL`).
 */
export class Meter {
  readonly #startupTimeoutMs: number;
  readonly #shutdownTimeoutMs: number;
  /** A shutdown() is running: what is queued meanwhile is its flush's to send. */
  #shuttingDown = false;
  readonly #report: Reporter;
  readonly #transport: Transport;
  readonly #queue: EventQueue;
  readonly #callbacks: Callbacks;
  readonly #users: Users;
  readonly #admission: Admission;
  readonly #recorder: Recorder;
  /** Budget leases (`leases: true`), else null. */
  readonly #leases: Leases | null;
  readonly #timers: ReturnType<typeof setInterval>[];

  constructor(options: MeterOptions = {}) {
    const apiKey = options.apiKey ?? process.env.METER_API_KEY;
    const baseURL = options.baseURL ?? process.env.METER_BASE_URL;
    if (!apiKey) throw new MeterTypeError("Meter: apiKey is required (or set METER_API_KEY)");
    if (!baseURL) throw new MeterTypeError("Meter: baseURL is required (or set METER_BASE_URL), e.g. https://meter.example.com/api/v1");
    // Every option is checked before the address, whose check a test of another option's must not meet first.
    const leaseOptions = flag("leases", options.leases, false) ? leaseSettings(options) : null;
    if (!/^https?:\/\//.test(baseURL)) throw new MeterTypeError(`Meter: baseURL must be an http(s) URL, got ${baseURL}`);
    if (/^https?:\/\/[^/]+\/?$/.test(baseURL)) {
      throw new MeterTypeError(`Meter: baseURL ${baseURL} has no path; the API is served under /api/v1: use ${baseURL.replace(/\/?$/, "/api/v1")}`);
    }
    const blocking = flag("blocking", options.blocking, true);
    const flushIntervalMs = durationMs("flushIntervalMs", options.flushIntervalMs, 5_000);
    const refreshIntervalMs = durationMs("refreshIntervalMs", options.refreshIntervalMs, 60_000);
    this.#startupTimeoutMs = durationMs("startupTimeoutMs", options.startupTimeoutMs, 3_000);
    this.#shutdownTimeoutMs = durationMs("shutdownTimeoutMs", options.shutdownTimeoutMs, 10_000);
    const maxQueueSize = positiveInt("maxQueueSize", options.maxQueueSize, 10_000);
    const maxBatchSize = positiveInt("maxBatchSize", options.maxBatchSize, 1_000);
    if (maxBatchSize > MAX_BATCH) throw new MeterTypeError(`Meter: maxBatchSize must be at most ${MAX_BATCH.toLocaleString("en-US")} (the service's limit), got ${maxBatchSize}`);
    const requestTimeoutMs = durationMs("requestTimeoutMs", options.requestTimeoutMs, 10_000);
    const failClosed = flag("failClosed", options.failClosed, false);
    const report = (this.#report = new Reporter(options.logger ?? console, options.onError, failClosed));
    this.#callbacks = new Callbacks(report);
    this.#transport = new Transport(baseURL, apiKey, requestTimeoutMs);
    this.#queue = new EventQueue(this.#transport, maxQueueSize, maxBatchSize, {
      delivered: (events, kind) => {
        report.keyAccepted();
        for (const e of events) {
          if (kind === "usage") this.#recorder.delivered(e as UsageEvent);
          this.#users.get(e.user_id)?.delivered();
        }
      },
      discarded: (events) => {
        for (const e of events) this.#users.get(e.user_id)?.delivered();
      },
      held: (e) => this.#recorder.unpriced(e as UsageEvent),
      stalled: (userIds) => this.#users.stalled(userIds),
      warn: (message, err) => report.warn(message, err),
      misaddressed: (err) => report.misaddressed(err),
      keyRefused: (err) => report.keyRefused(err),
      // Not while a shutdown runs: its own flush sends what its callbacks record.
      queuedAfterClose: () => {
        if (!this.#shuttingDown) deliverAtExit(this);
      },
    });
    this.#leases = leaseOptions ? new Leases(this.#transport, leaseOptions, (m, err) => report.warn(m, err)) : null;
    this.#recorder = new Recorder(this.#leases, this.#queue, this.#callbacks, (message) => report.warn(message));
    this.#users = new Users(this.#transport, { refreshIntervalMs, startupTimeoutMs: this.#startupTimeoutMs }, report, this.#leases, (e, first) => {
      this.#recorder.price(e);
      if (first) this.#callbacks.fire(this.#callbacks.sessionStart, { user_id: e.userId, plan: e.plan, billing_period: { start: e.periodStart, end: e.periodEnd } });
      this.#callbacks.credits(e.creditNews(clockNow()));
    });
    this.#admission = new Admission({ blocking, failClosed }, this.#leases, this.#queue, this.#callbacks, this.#ledger);
    // Timers never keep the process alive.
    this.#timers = [
      setInterval(() => {
        this.#queue.tick(performance.now());
        void this.#users.pollChanges();
      }, flushIntervalMs),
      setInterval(() => {
        const now = clockNow();
        this.#users.sweep(now);
        // Grants that expired while their users made no call.
        for (const e of this.#users.each()) if (e.credits !== null && now >= e.credits.nextExpiry) this.#callbacks.credits(e.creditNews(now));
      }, Math.min(60_000, refreshIntervalMs)),
    ];
    for (const t of this.#timers) t.unref();
    deliverAtExit(this);
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
      this.#transport.health(this.#startupTimeoutMs),
      this.#transport.changes(undefined, this.#startupTimeoutMs).catch((err: Error) => err),
    ]);
    // The health check decides: a slow key check does not make users' first loads skip their wait.
    this.#transport.reachable = health === "ok" || health === "degraded";
    if (health === "not_found") {
      this.#report.misaddressed(await this.#wrongAddress());
      return { healthy: false, authenticated: false };
    }
    if (health === "refused" || health === "timeout" || health === "unreachable") {
      const at = `${this.#transport.base}/health`;
      const what =
        health === "refused" ? `connection refused at ${at}: is the service running at that address?`
        : health === "timeout" ? `the service did not answer a health check at ${at} within ${this.#startupTimeoutMs} ms`
        : `the health check at ${at} failed (an error answer or no connection)`;
      this.#report.warn(`${what} ${this.#report.fallback()} until it answers`);
      return { healthy: false, authenticated: false };
    }
    if (health === "degraded") this.#report.warn("the service answers but reports its database unreachable; sessions may not load");
    if (key instanceof Error) {
      if (key instanceof MeterApiError && (key.status === 401 || key.status === 403)) this.#report.keyRefused(key);
      else this.#report.warn("the API key could not be checked", key);
      return { healthy: health === "ok", authenticated: false };
    }
    this.#report.keyAccepted();
    this.#users.markerSeen(key.marker);
    return { healthy: health === "ok", authenticated: true };
  }

  /** Reloads the user's session view now (plan, caps, usage), as a plan change does; the user's state after it. */
  async refresh(userId: string): Promise<UserState> {
    checkUser(userId);
    return (await this.#users.refresh(userId)).snapshot(clockNow());
  }

  /**
   * Runs when a call reaches a dimension's soft_gate_at (below hard_gate_at); the call still runs.
   * Callbacks of one kind fire in registration order; one that throws is logged and passed to
   * `onError`, and stops neither the others nor the call. There is no unregister.
   */
  onSoftGate(cb: (result: GuardResult, ctx: GateContext) => unknown): void {
    this.#callbacks.softGate.push(cb);
  }
  /**
   * Runs when a call reaches a dimension's hard_gate_at, before the `LimitExceededError` is
   * thrown (with `blocking: false`, before the call proceeds). Callbacks of one kind fire in registration order; one that throws is logged and passed to
   * `onError`, and stops neither the others nor the call. There is no unregister.
   */
  onHardGate(cb: (result: GuardResult, ctx: GateContext) => unknown): void {
    this.#callbacks.hardGate.push(cb);
  }
  /** Runs after every metered call and manual event, with its usage event. Callbacks of one kind fire in registration order; one that throws is logged and passed to
   * `onError`, and stops neither the others nor the call. There is no unregister. */
  onUsage(cb: (event: UsageEvent) => unknown): void {
    this.#callbacks.usage.push(cb);
  }
  /** Runs when a user's session view is first loaded (user, plan, billing period). Callbacks of one kind fire in registration order; one that throws is logged and passed to
   * `onError`, and stops neither the others nor the call. There is no unregister. */
  onSessionStart(cb: (state: SessionStartState) => unknown): void {
    this.#callbacks.sessionStart.push(cb);
  }
  /**
   * Prepaid credits: `cb` runs once each time a user's balance, as this process counts it,
   * falls below the plan's credits_low_at (armed again when a grant lifts it back): the moment
   * to charge the customer and post a grant (auto top-up).
   */
  onCreditsLow(cb: (event: CreditsEvent) => unknown): void {
    this.#callbacks.creditsLow.push(cb);
  }
  /** Prepaid credits: `cb` runs when a user's balance goes from above 0 to 0 or below. */
  onCreditsDepleted(cb: (event: CreditsEvent) => unknown): void {
    this.#callbacks.creditsDepleted.push(cb);
  }
  /** Prepaid credits: `cb` runs when a grant of a user expires with money left (at its `expires_at`, or the user's next call after it). */
  onCreditsExpired(cb: (event: CreditsEvent) => unknown): void {
    this.#callbacks.creditsExpired.push(cb);
  }
  /**
   * Runs `cb` when shutdown() starts, before its final delivery: what is still open then (a
   * model call whose stream its reader left) is recorded now rather than lost with the process.
   */
  onShutdown(cb: () => unknown): void {
    this.#callbacks.closing.push(cb);
  }

  /** Checks a coming call against the user's plan. Throws LimitExceededError on a hard gate when blocking. */
  async guard(userId: string, input: GuardInput = {}): Promise<GuardResult> {
    checkUser(userId);
    // One read of the clock for a loaded user's guard: it costs as much as a tenth of the guard.
    const now = clockNow();
    const e = this.#users.ready(userId, now);
    if (e !== undefined) return this.#admission.admit(e, input, false, now) as GuardResult;
    return this.#admission.admit(await this.#users.load(userId), input, false) as GuardResult;
  }

  /**
   * guard() and the call's reservation held against the limits in the same step: its estimate with
   * `pre_call_estimate`, else the user's typical call of the model (an estimate on the first call).
   */
  async reserve(userId: string, input: GuardInput = {}): Promise<Reservation> {
    const now = this.#reserveNow(userId, input);
    if (now) return now;
    const e = this.#users.ready(userId) ?? (await this.#users.load(userId));
    const admission = this.#admission;
    input = admission.sized(e, input);
    const lease = this.#leases && admission.leaseNeed(e, input);
    const admit = () => admission.admit(e, input, true) as Reservation;
    // The lease does not cover the estimate: wait for it (bounded, see Leases.wait). The check and the hold are one synchronous step, there as here.
    if (lease && !this.#leases!.covers(e, lease)) return this.#leases!.wait(e, () => admission.leaseNeed(e, input), admit);
    return admit();
  }

  /** reserve() in the same tick when nothing has to be waited for; see reserveNow() above. */
  #reserveNow(userId: string, input: GuardInput = {}): Reservation | undefined {
    checkUser(userId);
    const now = clockNow();
    const e = this.#users.ready(userId, now);
    if (e === undefined) return undefined;
    if (this.#leases) {
      input = this.#admission.sized(e, input);
      const lease = this.#admission.leaseNeed(e, input);
      if (lease && !this.#leases.covers(e, lease)) return undefined;
    }
    return this.#admission.admit(e, input, true, now) as Reservation;
  }

  /** Meters a call that already ran. */
  async record(userId: string, input: RecordInput = {}): Promise<UsageEvent> {
    checkUser(userId);
    checkUsage(input);
    const e = this.#users.ready(userId) ?? (await this.#users.load(userId));
    const now = clockNow();
    const session = e.sessions.at(sessionOf(userId, input.session_id), now, e.timeoutMs);
    return this.#recorder.record(e, session, e.model(input.model), input, input.metadata, now);
  }

  /**
   * reserve(), then `fn`, then commit with `input.usage(out)`. When `fn` (or `usage`) throws,
   * nothing is recorded, the reservation is released and the error rethrown.
   */
  async call<T>(userId: string, input: CallInput<NoInfer<T>>, fn: () => T | Promise<T>): Promise<T> {
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
    const created = await postManual(this.#transport, body);
    const e = this.#users.get(userId);
    const session = e?.sessions.at(sessionOf(userId, input.session_id), clockNow(), e.timeoutMs);
    this.#recorder.manual(userId, created, input, e, session, sessionOf(userId, input.session_id));
    return created;
  }

  /**
   * POST /users/{userId}/portal-tokens: a token that reads this one user's state (GET /portal/me,
   * the `<meter-usage>` widget) and nothing else, for the user's browser. Mint one per page view;
   * the API key never leaves the server. An admin or ingest key may mint.
   */
  async portalToken(userId: string, options: PortalTokenOptions = {}): Promise<PortalToken> {
    checkUser(userId);
    checkPortalTtl(options.ttlSeconds);
    const body = options.ttlSeconds === undefined ? {} : { ttl_seconds: options.ttlSeconds };
    return this.#transport.request<PortalToken>("POST", `/users/${encodeURIComponent(userId)}/portal-tokens`, body);
  }

  /** The user's cached state; undefined before the first guard/record for the user. */
  state(userId: string): UserState | undefined {
    return this.#users.get(userId)?.snapshot(clockNow());
  }

  /**
   * Runs `fn` with `userId` as the current user of its async context (see currentUser()) and,
   * with `session_id`, that session as the default of every call for the user inside it: one
   * wrapped model client then serves many conversations, each with its own session cap.
   */
  withUser<T>(userId: string, fn: () => T, options: { session_id?: string | null } = {}): T {
    checkUser(userId);
    const sessionId = options?.session_id ?? undefined;
    if (sessionId !== undefined && (typeof sessionId !== "string" || sessionId.length === 0 || !withinChars(sessionId, 255))) {
      throw new MeterTypeError("withUser: session_id must be a string of 1 to 255 characters");
    }
    return runWithUser(userId, sessionId, fn);
  }

  /** The user set by the enclosing withUser(), or undefined. */
  currentUser(): string | undefined {
    return currentUser();
  }

  /** Counters of delivery (sent, dropped, rejected, held, busy answers) and whether the key is refused. */
  get stats(): MeterStats {
    const q = this.#queue;
    const stats: MeterStats = { queued: q.size, held: q.held, sent: q.sent, dropped: q.dropped, rejected: q.rejected, busy: q.busy, key_refused: this.#report.refusedKey !== undefined, users: this.#users.size };
    if (this.#leases) {
      stats.lease_requests = this.#leases.requests;
      stats.lease_waits = this.#leases.waits;
      stats.leased_users = this.#leases.size;
      stats.leased_teams = this.#leases.teamSize;
    }
    return stats;
  }

  /**
   * Delivers what is queued, retrying transient failures for up to `timeoutMs` (default
   * shutdownTimeoutMs). True when the queue emptied, false when time ran out; rejects with
   * MeterAuthenticationError, at once, when the service refuses the API key (no retry can
   * deliver until it is fixed).
   */
  async flush(options: { timeoutMs?: number } = {}): Promise<boolean> {
    const drained = await this.#queue.drain(performance.now() + callTimeoutMs("flush", options.timeoutMs, this.#shutdownTimeoutMs), () => this.#report.refusedKey !== undefined);
    const refused = this.#report.refusedKey;
    if (!drained && refused) throw new MeterAuthenticationError(refused.status, `${this.#queue.size} events not delivered: ${refused.detail}`);
    return drained;
  }

  /** Stops the timers and delivers what is queued (up to shutdownTimeoutMs). Call it last. */
  async shutdown(options: { timeoutMs?: number } = {}): Promise<boolean> {
    callTimeoutMs("shutdown", options.timeoutMs, 0);
    unshut.delete(this);
    this.#shuttingDown = true;
    try {
      return await this.#shutdown(options);
    } finally {
      this.#shuttingDown = false;
    }
  }

  async #shutdown(options: { timeoutMs?: number }): Promise<boolean> {
    const deadline = performance.now() + (options.timeoutMs ?? this.#shutdownTimeoutMs);
    for (const t of this.#timers) clearInterval(t);
    // Calls still open are recorded first, so that what they spent leaves the lease before it is given back.
    this.#callbacks.fire(this.#callbacks.closing, undefined);
    // Giving leases back takes at most half of the time (a lease not given back lapses on the
    // service at its end); the events get the rest, so the whole stays within the timeout.
    if (this.#leases) {
      const half = performance.now() + (deadline - performance.now()) / 2;
      await settledWithin(this.#leases.releaseAll(half), half - performance.now());
    }
    // Shutdown never throws: a refused key was logged as an error when it was met.
    const drained = await this.flush({ timeoutMs: Math.max(0, deadline - performance.now()) }).catch(() => false);
    this.#queue.close();
    if (!drained) {
      const message = `shutdown: ${this.#queue.size} events could not be delivered${this.#report.refusedKey ? " (the API key is refused)" : ""}`;
      this.#report.warn(message, new MeterEventsDroppedError("undelivered", this.#queue.size, message));
    }
    return drained;
  }

  static {
    reserveNowOf = (meter, userId, input) => meter.#reserveNow(userId, input);
    reporterOfMeter = (meter) => meter.#report;
  }

  /** What a Reservation commits and releases through: not on the class, so not part of the API. */
  readonly #ledger: Ledger = {
    settle: (hold, used) => this.#settle(hold, used),
    unhold: (hold) => this.#unhold(hold),
  };

  /** Reservation.commit(). */
  #settle(hold: Hold, used: UsageInput): UsageEvent {
    checkUsage(used);
    this.#unhold(hold);
    return this.#recorder.record(hold.entry, hold.session, hold.model, used, used.metadata ?? hold.metadata, clockNow());
  }

  /** Reservation.release(). */
  #unhold(hold: Hold): void {
    hold.entry.unhold(hold);
    this.#leases?.unhold(hold);
  }

  /** Why nothing of the API answers at baseURL, with the address to use when it can be found. */
  async #wrongAddress(): Promise<MeterError> {
    const base = this.#transport.base;
    const candidates = likelyBases(base);
    let found: string | undefined;
    for (const b of candidates) {
      const there = await this.#transport.health(this.#startupTimeoutMs, b);
      if (there === "ok" || there === "degraded") {
        found = b;
        break;
      }
    }
    return new MeterError(`nothing of the Meter API answers at ${base} (GET ${base}/health: 404); ${addressHint(base, found)}. Until it is fixed, no event is delivered and ${this.#report.fallback()}`);
  }
}

function leaseSettings(o: MeterOptions) {
  const fallback = o.leaseFallback ?? "slice";
  if (fallback !== "slice" && fallback !== "open") throw new MeterTypeError(`Meter: leaseFallback must be "slice" or "open", got ${String(fallback)}`);
  return {
    ttlMs: durationMs("leaseTtlMs", o.leaseTtlMs, 60_000),
    callsPerLease: positiveInt("leaseCalls", o.leaseCalls, 40),
    idleMs: durationMs("leaseIdleMs", o.leaseIdleMs, 10_000),
    fallback,
  } as const;
}

/** Waits for `work` at most `ms`; what it does after goes on unwatched (its failures are its own to report). */
function settledWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((done) => {
    timer = setTimeout(done, Math.max(0, ms));
    timer.unref?.();
  });
  return Promise.race([work.then(() => undefined, () => undefined), late]).finally(() => clearTimeout(timer));
}
