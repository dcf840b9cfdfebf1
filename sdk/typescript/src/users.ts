/**
 * The users this process meters: one UserEntry each, loaded from the service's session view
 * (GET /users/{id}/session), reloaded when due, when the product's change marker names them
 * (or their team), or at a period's end (theirs or their team's), and dropped when idle; the
 * teams of the members, one entry per team shared by them (team-state.ts).
 */
import { now as clockNow } from "./clock.ts";
import { MeterApiError } from "./errors.ts";
import type { Leases } from "./leases.ts";
import type { Reporter } from "./reporting.ts";
import { UserEntry } from "./state.ts";
import { Teams } from "./team-state.ts";
import { addressHint, type Changes, type Transport } from "./transport.ts";

/** Longest wait for /health after a session's 404 (it adds to that load's wait); the gateway's own takes up to 2 s when a service is slow. */
const API_CHECK_MS = 2_500;

/** Retry delay of a session load that failed (capped by refreshIntervalMs). */
const LOAD_RETRY_MS = 5_000;

export interface UsersSettings {
  refreshIntervalMs: number;
  startupTimeoutMs: number;
}

export class Users {
  readonly #entries = new Map<string, UserEntry>();
  readonly #loading = new Map<string, Promise<UserEntry>>();
  /** The members' teams: one entry per team id, shared by every member this process serves. */
  readonly teams = new Teams();
  /** The product's change marker last seen (GET /config/changes); undefined until the first answer. */
  #marker: number | undefined;
  #pollingChanges = false;
  /** A session load met a 404 where the API does not answer: said once. */
  #misaddressedSaid = false;
  /** The change route answered 404 (a service from before it, or a wrong address): asked again only after this (ms). */
  #changesRetryAt = 0;

  constructor(
    private readonly transport: Transport,
    private readonly settings: UsersSettings,
    private readonly report: Reporter,
    private readonly leases: Leases | null,
    /** A view (or the service's 404) was applied to `e`; `first`: the first view of the user. */
    private readonly viewed: (e: UserEntry, first: boolean) => void,
  ) {}

  get size(): number {
    return this.#entries.size;
  }

  get(userId: string): UserEntry | undefined {
    return this.#entries.get(userId);
  }

  /** The cached users. */
  each(): IterableIterator<UserEntry> {
    return this.#entries.values();
  }

  /** start() read the change marker. */
  markerSeen(marker: number): void {
    this.#marker = marker;
  }

  /** The user's entry when it can be used as is (loaded, period not over) at `now`; schedules a due reload. */
  ready(userId: string, now = clockNow()): UserEntry | undefined {
    const e = this.#entries.get(userId);
    if (e === undefined) return undefined;
    if (now >= e.periodEndMs || (e.team !== null && now >= e.team.periodEndMs)) return undefined;
    if (now >= e.refreshAt && e.refreshing === null) void this.reload(e, undefined);
    return e;
  }

  /** First load (shared by concurrent callers) or period rollover. */
  load(userId: string): Promise<UserEntry> {
    const cached = this.#entries.get(userId);
    if (cached) return this.rollover(cached);
    let p = this.#loading.get(userId);
    if (!p) {
      p = this.firstLoad(userId).finally(() => this.#loading.delete(userId));
      this.#loading.set(userId, p);
    }
    return p;
  }

  /** Reloads the user's view now, as a plan change does (loads it when not cached). */
  async refresh(userId: string): Promise<UserEntry> {
    const e = this.#entries.get(userId);
    if (e === undefined) return this.load(userId);
    // A reload already under way may have been sent before the change the caller knows of.
    if (e.refreshing) await e.refreshing;
    this.leases?.renew(userId, e.team?.teamId ?? null);
    await this.reload(e, this.settings.startupTimeoutMs);
    return e;
  }

  /** Deliveries of these users' events are held back (unpriced) and stalled: reload them. */
  stalled(userIds: Iterable<string>): void {
    for (const id of userIds) {
      const e = this.#entries.get(id);
      if (e && e.refreshing === null) void this.reload(e, undefined);
    }
  }

  /**
   * Waits for the session view up to startupTimeoutMs, and not at all while the service is
   * known to be unreachable: then the user starts with permissive defaults and the view is
   * applied when it arrives.
   */
  private async firstLoad(userId: string): Promise<UserEntry> {
    const e = new UserEntry(userId, clockNow());
    const loaded = this.reload(e, this.settings.startupTimeoutMs);
    if (this.transport.reachable) await loaded;
    // A view whose period has ended already: the next one starts here, as at a rollover.
    if (e.loaded) rollIfOver(e, clockNow());
    this.#entries.set(userId, e);
    return e;
  }

  /** The period ended: reload; if the service gives no new period, clear counters locally. */
  private async rollover(e: UserEntry): Promise<UserEntry> {
    const loaded = this.reload(e, this.settings.startupTimeoutMs);
    if (this.transport.reachable) await loaded;
    rollIfOver(e, clockNow());
    return e;
  }

  /**
   * Reloads a view read again only because no marker says what changed (the first poll of a
   * Meter not started, a marker the service no longer knows), or once more after a change: its
   * lease is asked for again only when the view's caps turn out to have changed, so that such a
   * poll does not send a request for every user's lease.
   */
  private async reloadRenewingIfChanged(e: UserEntry): Promise<void> {
    const before = leaseTerms(e);
    const teamId = e.team?.teamId ?? null;
    await this.reload(e, undefined);
    if (leaseTerms(e) !== before) this.leases?.renew(e.userId, teamId);
  }

  /** Reloads the user's session view (one request at a time per user); never rejects. */
  private reload(e: UserEntry, timeoutMs: number | undefined): Promise<void> {
    if (e.refreshing) return e.refreshing;
    const wasReachable = this.transport.reachable;
    const { refreshIntervalMs } = this.settings;
    return e.reloading(this.transport
      .getSession(e.userId, timeoutMs)
      .then(
        (view) => {
          const { first } = e.apply(view, clockNow(), refreshIntervalMs, this.teams);
          this.viewed(e, first);
        },
        async (err: Error) => {
          // A 404 says "no such user" only when the API answers here: a wrong address (a proxy,
          // another service) answers 404 to every path, and failClosed must then hold, not open.
          // A /health that does not answer in time says nothing either way: the load failed.
          const missing = err instanceof MeterApiError && err.status === 404;
          const there = missing ? await this.transport.whatAnswers(Math.min(this.settings.startupTimeoutMs, API_CHECK_MS)) : undefined;
          const misaddressed = there === "not_found";
          const now = clockNow();
          if (there === "ok" || there === "degraded") {
            // Not registered (or deleted): permissive defaults; its events are still sent.
            e.notRegistered(now, refreshIntervalMs);
            this.viewed(e, false);
            return;
          }
          const firstFailure = e.loadFailedAt(now, Math.min(LOAD_RETRY_MS, refreshIntervalMs));
          if (misaddressed) {
            // Said once (an error, as start()'s and a delivery's 404 are), not once per user.
            if (!this.#misaddressedSaid) {
              this.#misaddressedSaid = true;
              const base = this.transport.base;
              this.report.misaddressed(new MeterApiError(404, `GET ${base}/users/{user_id}/session answered 404 and nothing of the Meter API answers at ${base}: ${addressHint(base)}; until it answers, ${this.report.fallback()}`));
            }
          } else if (err instanceof MeterApiError && (err.status === 401 || err.status === 403)) this.report.keyRefused(err);
          // Once per user and outage: a long outage must not flood the log.
          else if (wasReachable && firstFailure) this.report.warn(`loading the session of ${e.userId} failed; ${e.loaded ? "its cached view is used" : this.report.fallback()} until it loads`, err);
        },
      ));
  }

  /**
   * One flush tick: asks the service what changed since the marker last seen (one request per
   * client, whatever the number of users) and reloads only the users a plan update or a
   * subscription change concerns, so a change reaches every running client within
   * flushIntervalMs. Users named by the previous answer are read once more here: a read that
   * raced the change (another replica's short caches) may have been stale.
   */
  async pollChanges(): Promise<void> {
    if (this.#pollingChanges || Date.now() < this.#changesRetryAt) return;
    if (this.#entries.size === 0 && this.#marker !== undefined) return;
    for (const e of this.#entries.values()) {
      // Read once more after a change (the read that followed it may have been stale): the lease
      // is asked for again if this read shows caps the last one did not.
      if (e.takeRecheck()) void this.reloadRenewingIfChanged(e);
    }
    this.#pollingChanges = true;
    try {
      const since = this.#marker;
      const c: Changes = await this.transport.changes(since);
      if (this.#marker !== since) return;
      // No marker before this answer (start() not called, or it failed): every cached view may predate a change.
      const all = since === undefined || c.all;
      const plans = new Set(c.plan_ids);
      const users = new Set(c.user_ids);
      // A team's subscription set, or its plan updated: its members read the team again.
      const teams = new Set(c.team_ids ?? []);
      for (const e of this.#entries.values()) {
        const t = e.team;
        const named = users.has(e.userId) || (e.planId !== null && plans.has(e.planId)) || (t !== null && (teams.has(t.teamId) || (t.planId !== null && plans.has(t.planId))));
        if (!named && !all) continue;
        e.changed();
        if (named) {
          this.leases?.renew(e.userId, e.team?.teamId ?? null);
          void this.reload(e, undefined);
        } else void this.reloadRenewingIfChanged(e);
      }
      this.#marker = c.marker;
    } catch (err) {
      if (err instanceof MeterApiError && (err.status === 401 || err.status === 403)) {
        this.report.keyRefused(err);
      } else if (err instanceof MeterApiError && err.status === 404) {
        // A service from before the change marker (or a wrong baseURL, which deliveries report).
        if (this.#changesRetryAt === 0) this.report.warn(`GET /config/changes answered 404; until it answers, plan changes reach this process only by its periodic reloads (refreshIntervalMs ${this.settings.refreshIntervalMs} ms)`, err);
        this.#changesRetryAt = Date.now() + this.settings.refreshIntervalMs;
      }
      // Network errors and 5xx: the next tick asks again; deliveries report the outage.
    } finally {
      this.#pollingChanges = false;
    }
  }

  /** Drops idle users (session expired, nothing in flight or queued) and stale caller sessions. */
  sweep(now: number): void {
    for (const [id, e] of this.#entries) {
      e.sessions.prune(now, e.timeoutMs);
      if (e.refreshing === null && e.idle(now)) this.#entries.delete(id);
    }
    this.teams.sweep(this.#entries.values());
  }
}

/** The user's (and its team's) period over at `now` with no new one from the service: cleared locally. */
function rollIfOver(e: UserEntry, now: number): void {
  if (now >= e.periodEndMs) e.rollOver(now);
  if (e.team !== null && now >= e.team.periodEndMs) e.team.rollOver(now);
}

/** What a user's lease is granted under: the plan, its period, and its team's (Leases.renew). */
function leaseTerms(e: UserEntry): string {
  const t = e.team;
  return JSON.stringify([e.planId, e.config, e.periodEnd, t?.teamId ?? null, t?.planId ?? null, t?.config ?? null, t?.periodEnd ?? null]);
}
