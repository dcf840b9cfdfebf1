/**
 * Budget leases (`leases: true`): the user's period spend cap is spent from slices the
 * service grants to this process, so that many replicas together never pass it, with no
 * request per call. See the README, "Budget leases".
 */
import { randomUUID } from "node:crypto";
import { MeterApiError } from "./errors.ts";
import type { Transport } from "./transport.ts";
import type { UserEntry } from "./state.ts";
import type { GuardResult } from "./types.ts";

/** When the service cannot be asked: spend only what the slice holds, or fail open. */
export type LeaseFallback = "slice" | "open";

export interface LeaseSettings {
  /** Lease lifetime asked for (ms); the lease is spent only until then. */
  ttlMs: number;
  /** Calls' worth (of the call's estimate) asked for per request. */
  callsPerLease: number;
  /** A lease unused this long (ms) is given back. */
  idleMs: number;
  fallback: LeaseFallback;
}

interface LeaseWire {
  lease_id: string;
  granted: number;
  added: number;
  ttl_ms: number;
  period_end: string;
}

/** One user's lease held by this process. */
class Book {
  leaseId: string | null = null;
  /** Dollars the service granted this holder in the period (all grants). */
  granted = 0;
  /** Dollars taken from it: holds of calls in flight and the cost of finished calls. */
  used = 0;
  /** Spend from the lease stops here: the time the request was sent plus the lifetime. */
  deadline = 0;
  periodEndMs = 0;
  /** Until then the service said the user has no finite cap (nothing to lease); asked again after. */
  unlimitedUntil = 0;
  /** True while the service is unreachable and the fallback is "open". */
  open = false;
  /** Largest call estimate seen: the unit of what is asked for. */
  unit = 0;
  lastUse = 0;
  holds = 0;
  /** Callers that waited on the request in flight: the demand the next request asks for. */
  joined = 0;
  asking: Promise<boolean> | null = null;
  constructor(readonly userId: string) {}
}

export class Leases {
  /** This process as a lease holder. */
  readonly holder = `h_${randomUUID().replaceAll("-", "")}`;
  private readonly books = new Map<string, Book>();
  /** Lease requests sent (figures for benchmarks). */
  requests = 0;
  private warned = false;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly transport: Transport,
    private readonly settings: LeaseSettings,
    private readonly warn: (message: string, err?: Error) => void,
  ) {
    this.timer = setInterval(() => void this.releaseIdle(Date.now()), Math.max(50, Math.floor(settings.idleMs / 2)));
    this.timer.unref();
  }

  /** Whether the user's spend goes through a lease: a finite period cap, known to the service. */
  applies(e: UserEntry): boolean {
    if (e.config === null || e.config.max_spend_per_period === null || !e.loaded) return false;
    return Date.now() >= this.book(e).unlimitedUntil;
  }

  /** True when the lease covers `need` now (or the fallback is open while the service is unreachable). */
  covers(e: UserEntry, need: number): boolean {
    const b = this.book(e);
    if (b.open) return true;
    const left = this.balance(b, Date.now());
    return left > 0 && left >= need;
  }

  /** Asks for more (one request per user at a time); resolves true when something was granted. */
  ask(e: UserEntry, need: number): Promise<boolean> {
    const b = this.book(e);
    b.unit = Math.max(b.unit, need);
    if (b.asking) {
      b.joined++;
      return b.asking;
    }
    const sentAt = Date.now();
    const want = Math.max(need, this.full(b) + b.unit * b.joined);
    b.joined = 0;
    this.requests++;
    b.asking = this.transport
      .request<{ limited: boolean; lease: LeaseWire | null }>("POST", `/users/${encodeURIComponent(b.userId)}/leases`, {
        holder: this.holder,
        need,
        want,
        ttl_ms: this.settings.ttlMs,
      })
      .then(
        (res) => {
          b.open = false;
          if (!res.limited || !res.lease) {
            b.unlimitedUntil = Date.now() + 60_000;
            return true;
          }
          const l = res.lease;
          if (b.leaseId === null || Date.parse(l.period_end) !== b.periodEndMs) {
            // A new period: the lease starts from what the service holds for it.
            b.used = 0;
          }
          b.leaseId = l.lease_id;
          b.periodEndMs = Date.parse(l.period_end);
          if (l.added > 0) {
            b.granted = l.granted;
            b.deadline = sentAt + l.ttl_ms;
          }
          return l.added > 0;
        },
        (err: Error) => {
          if (err instanceof MeterApiError && !err.retryable) {
            this.warn(`lease request for ${b.userId} refused`, err);
            return false;
          }
          b.open = this.settings.fallback === "open";
          if (!this.warned) this.warn(`lease request failed; ${b.open ? "calls fail open" : "calls spend only what the lease holds"} until the service answers`, err);
          this.warned = true;
          return false;
        },
      )
      .finally(() => {
        b.asking = null;
      });
    return b.asking;
  }

  /**
   * Takes a call's estimate from the lease (synchronously, after covers()). False: the lease
   * cannot cover it and the call is hard-gated. Starts a top-up below a quarter of a full ask.
   */
  take(e: UserEntry, cost: number): { leaseId: string | null } | null {
    const b = this.book(e);
    const now = Date.now();
    b.lastUse = now;
    if (b.open) return { leaseId: null };
    const left = this.balance(b, now);
    if (left <= 0 || left < cost) return null;
    b.used += cost;
    b.holds++;
    if (left - cost < this.full(b) / 2 && b.asking === null) void this.ask(e, Math.max(cost, b.unit));
    return { leaseId: b.leaseId };
  }

  /** Gives a hold back (`cost` is what take() took); the call's real cost, if it ran, comes through spend(). */
  unhold(userId: string, leaseId: string | null, cost: number): void {
    const b = this.books.get(userId);
    if (!b || leaseId === null || b.leaseId !== leaseId) return;
    b.used = Math.max(0, b.used - cost);
    b.holds = Math.max(0, b.holds - 1);
  }

  /**
   * The cost of a metered call (reserved or recorded after the fact) is spent from the user's
   * lease; returns the lease id its usage event carries, or null.
   */
  spend(userId: string, cost: number): string | null {
    const b = this.books.get(userId);
    if (!b || b.leaseId === null) return null;
    b.used += cost;
    return b.leaseId;
  }

  /** The hard gate of a call the lease cannot cover. */
  refusal(e: UserEntry, need: number): GuardResult {
    const cap = e.config!.max_spend_per_period! * e.config!.hard_gate_at;
    const current = e.periodCost + e.reservedCost;
    return {
      status: "hard_gate",
      gate_reason: "total_spend",
      usage_pct: cap > 0 ? Math.max(1, current / cap) : 1,
      current_value: current,
      limit_value: cap,
      message: `period spend cap of ${cap} reached: no budget lease covers this call (${need.toFixed(6)}) across replicas`,
    };
  }

  /** Gives back every lease (shutdown). */
  async releaseAll(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all([...this.books.values()].map((b) => this.release(b)));
  }

  private async releaseIdle(now: number): Promise<void> {
    for (const b of this.books.values()) {
      if (b.leaseId !== null && b.holds === 0 && b.asking === null && now - b.lastUse >= this.settings.idleMs && this.balance(b, now) > 0) {
        await this.release(b);
      }
    }
  }

  /** The lease keeps what was used; the rest goes back to the user's pool. */
  private async release(b: Book): Promise<void> {
    if (b.leaseId === null || b.granted <= b.used) return;
    b.granted = b.used;
    try {
      await this.transport.request("POST", `/users/${encodeURIComponent(b.userId)}/leases/${b.leaseId}/release`, { used: b.used });
    } catch (err) {
      // Not given back: it returns to the pool when it expires.
      if (!(err instanceof MeterApiError && err.status === 404)) this.warn(`giving back the lease of ${b.userId} failed`, err as Error);
    }
  }

  /** What one request asks for: callsPerLease calls plus one per call in flight (the replica's concurrency). */
  private full(b: Book): number {
    return b.unit * (this.settings.callsPerLease + b.holds);
  }

  private balance(b: Book, now: number): number {
    if (now >= b.deadline || now >= b.periodEndMs) return 0;
    return b.granted - b.used;
  }

  private book(e: UserEntry): Book {
    let b = this.books.get(e.userId);
    if (!b) {
      b = new Book(e.userId);
      this.books.set(e.userId, b);
    }
    return b;
  }
}
