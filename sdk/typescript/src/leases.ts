/**
 * Budget leases (`leases: true`): the user's period spend cap and per-model token caps are
 * spent from slices the service grants to this process, so that many replicas together never
 * pass them, with no request per call. See the README, "Budget leases".
 */
import { randomUUID } from "node:crypto";
import { MeterApiError } from "./errors.ts";
import type { Transport } from "./transport.ts";
import type { UserEntry } from "./state.ts";
import type { GuardResult } from "./types.ts";

/** While failing open, how often a call asks again whether the service answers (ms). */
const OPEN_RETRY_MS = 1_000;

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

interface TokenLeaseWire {
  model: string;
  granted: number;
  added: number;
}

interface LeaseWire {
  lease_id: string;
  granted: number;
  added: number;
  ttl_ms: number;
  period_end: string;
  spend_limited: boolean;
  tokens: TokenLeaseWire | null;
}

/** One budget of a lease: dollars, or one model's tokens. */
class Slice {
  /** Granted by the service to this holder in the period (all grants). */
  granted = 0;
  /** Taken from it: holds of calls in flight and the usage of finished calls. */
  used = 0;
  /** Largest call estimate seen: the unit of what is asked for. */
  unit = 0;
  /** `used` when the last request was sent: what was taken since measures the spend rate. */
  usedAtAsk = 0;
  /** Taken per ms between the last two requests. */
  rate = 0;
}

/** What a call needs from the lease: dollars, and tokens of its model when the plan caps them. */
export interface LeaseNeed {
  cost: number;
  /** Normalized model whose tokens the plan caps, else null. */
  model: string | null;
  tokens: number;
}

/** One user's lease held by this process. */
class Book {
  leaseId: string | null = null;
  readonly spend = new Slice();
  /** Token slices by normalized model. */
  readonly tokens = new Map<string, Slice>();
  /** Spend from the lease stops here: the time the request was sent plus the lifetime. */
  deadline = 0;
  periodEndMs = 0;
  /** Until then the service said the user has nothing capped (nothing to lease); asked again after. */
  unlimitedUntil = 0;
  /** True while the service is unreachable and the fallback is "open". */
  open = false;
  lastUse = 0;
  /** When the last request was sent, and the round trip of requests (moving average, ms). */
  askedAt = 0;
  roundTripMs = 0;
  holds = 0;
  /** Callers that waited on the request in flight: the demand the next request asks for. */
  joined = 0;
  asking: Promise<boolean> | null = null;
  constructor(readonly userId: string) {}

  slice(model: string): Slice {
    let s = this.tokens.get(model);
    if (!s) {
      s = new Slice();
      this.tokens.set(model, s);
    }
    return s;
  }
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

  /** What a call of `model` needs from the lease, or null when nothing it spends is capped (or the user is not loaded). */
  need(e: UserEntry, model: string | null, cost: number, tokens: number): LeaseNeed | null {
    const plan = e.config;
    if (plan === null || !e.loaded) return null;
    const capped = model !== null && plan.model_limits[model] !== undefined ? model : null;
    if (plan.max_spend_per_period === null && capped === null) return null;
    if (Date.now() < this.book(e).unlimitedUntil) return null;
    return { cost: plan.max_spend_per_period === null ? 0 : cost, model: capped, tokens: capped === null ? 0 : tokens };
  }

  /** True when the lease covers the call now (or the fallback is open while the service is unreachable). */
  covers(e: UserEntry, n: LeaseNeed): boolean {
    const b = this.book(e);
    return b.open || this.short(e, b, n, Date.now()) === null;
  }

  /** Asks for more (one request per user at a time); resolves true when every short budget was granted something. */
  ask(e: UserEntry, n: LeaseNeed): Promise<boolean> {
    const b = this.book(e);
    b.spend.unit = Math.max(b.spend.unit, n.cost);
    if (n.model !== null) {
      const t = b.slice(n.model);
      t.unit = Math.max(t.unit, n.tokens);
    }
    if (b.asking) {
      b.joined++;
      return b.asking;
    }
    const sentAt = Date.now();
    const rate = (s: Slice) => Math.max(0, s.used - s.usedAtAsk) / Math.max(1, sentAt - b.askedAt);
    b.spend.rate = rate(b.spend);
    for (const t of b.tokens.values()) t.rate = rate(t);
    b.askedAt = sentAt;
    for (const s of [b.spend, ...b.tokens.values()]) s.usedAtAsk = s.used;
    const spend = this.asked(b, b.spend, n.cost, sentAt);
    const body: Record<string, unknown> = { holder: this.holder, need: spend.need, want: spend.want, ttl_ms: this.settings.ttlMs };
    let tokens: { short: boolean } | null = null;
    if (n.model !== null) {
      const t = this.asked(b, b.slice(n.model), n.tokens, sentAt);
      Object.assign(body, { model: n.model, need_tokens: Math.ceil(t.need), want_tokens: Math.ceil(t.want) });
      tokens = t;
    }
    b.joined = 0;
    this.requests++;
    b.asking = this.transport
      .request<{ limited: boolean; lease: LeaseWire | null }>("POST", `/users/${encodeURIComponent(b.userId)}/leases`, body)
      .then(
        (res) => {
          const rtt = Date.now() - sentAt;
          b.roundTripMs = b.roundTripMs === 0 ? rtt : 0.7 * b.roundTripMs + 0.3 * rtt;
          b.open = false;
          if (!res.limited || !res.lease) {
            b.unlimitedUntil = Date.now() + 60_000;
            return true;
          }
          const l = res.lease;
          if (b.leaseId === null || Date.parse(l.period_end) !== b.periodEndMs) {
            // A new period: the lease starts from what the service holds for it.
            b.spend.granted = b.spend.used = 0;
            b.tokens.clear();
          }
          b.leaseId = l.lease_id;
          b.periodEndMs = Date.parse(l.period_end);
          // Done when every budget that could not cover the call got something.
          const ok = (!spend.short || !l.spend_limited || l.added > 0) && (tokens === null || !tokens.short || l.tokens === null || l.tokens.added > 0);
          if (l.added > 0 || (l.tokens?.added ?? 0) > 0) {
            // The lease as written: a lapsed one restarted in every budget, so the token
            // budgets of other models hold nothing here until asked for again.
            if (sentAt >= b.deadline) for (const t of b.tokens.values()) t.granted = Math.min(t.granted, t.used);
            b.spend.granted = l.granted;
            if (n.model !== null && l.tokens !== null) b.slice(n.model).granted = l.tokens.granted;
            b.deadline = sentAt + l.ttl_ms;
          }
          return ok;
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
   * Takes a call's estimate from the lease (synchronously, after covers()): the lease id its
   * usage event carries, or the hard gate of the budget the lease cannot cover. Starts a
   * top-up below half a full ask.
   */
  take(e: UserEntry, n: LeaseNeed): { leaseId: string | null } | { refused: GuardResult } {
    const b = this.book(e);
    const now = Date.now();
    b.lastUse = now;
    if (b.open) {
      // Failing open until the service answers again: ask now and then whether it does.
      if (b.asking === null && now - b.askedAt >= OPEN_RETRY_MS) void this.ask(e, n);
      return { leaseId: null };
    }
    const short = this.short(e, b, n, now);
    if (short !== null) return { refused: short };
    b.spend.used += n.cost;
    const t = n.model === null ? null : b.slice(n.model);
    if (t) t.used += n.tokens;
    b.holds++;
    const low = this.balance(b, b.spend, now) < this.full(b, b.spend) / 2 || (t !== null && this.balance(b, t, now) < this.full(b, t) / 2);
    if (low && b.asking === null) void this.ask(e, n);
    return { leaseId: b.leaseId };
  }

  /** Gives a hold back (what take() took); the call's real usage, if it ran, comes through spend(). */
  unhold(userId: string, leaseId: string | null, cost: number, model: string | null, tokens: number): void {
    const b = this.books.get(userId);
    if (!b || leaseId === null || b.leaseId !== leaseId) return;
    b.spend.used = Math.max(0, b.spend.used - cost);
    const t = model === null ? undefined : b.tokens.get(model);
    if (t) t.used = Math.max(0, t.used - tokens);
    b.holds = Math.max(0, b.holds - 1);
  }

  /**
   * The usage of a metered call (reserved or recorded after the fact) is spent from the
   * user's lease; returns the lease id its usage event carries, or null.
   */
  spend(userId: string, cost: number, model: string | null, tokens: number): string | null {
    const b = this.books.get(userId);
    if (!b || b.leaseId === null) return null;
    b.spend.used += cost;
    const t = model === null ? undefined : b.tokens.get(model);
    if (t) t.used += tokens;
    return b.leaseId;
  }

  /** The user's plan or subscription changed: its next call asks for the lease again, under the new caps. */
  renew(userId: string): void {
    const b = this.books.get(userId);
    if (!b) return;
    b.deadline = 0;
    b.unlimitedUntil = 0;
  }

  /** Gives back every lease (shutdown). */
  async releaseAll(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all([...this.books.values()].map((b) => this.release(b)));
  }

  /** The hard gate of the first budget the lease cannot cover, or null when it covers the call. */
  private short(e: UserEntry, b: Book, n: LeaseNeed, now: number): GuardResult | null {
    const plan = e.config!;
    if (plan.max_spend_per_period !== null) {
      const left = this.balance(b, b.spend, now);
      if (left <= 0 || left < n.cost) {
        const cap = plan.max_spend_per_period * plan.hard_gate_at;
        return refusal("total_spend", e.periodCost + e.reservedCost, cap, `period spend cap of ${cap} reached: no budget lease covers this call (${n.cost.toFixed(6)}) across replicas`);
      }
    }
    if (n.model !== null) {
      const t = b.tokens.get(n.model);
      const left = t ? this.balance(b, t, now) : 0;
      if (left <= 0 || left < n.tokens) {
        const cap = plan.model_limits[n.model]!.max_tokens_per_period * plan.hard_gate_at;
        const current = (e.tokensByModel[n.model] ?? 0) + (e.reservedTokens[n.model] ?? 0);
        return refusal(`model_limit:${n.model}`, current, cap, `token cap of ${cap} for ${n.model} reached: no budget lease covers this call (${n.tokens} tokens) across replicas`);
      }
    }
    return null;
  }

  private async releaseIdle(now: number): Promise<void> {
    for (const b of this.books.values()) {
      if (b.leaseId !== null && b.holds === 0 && b.asking === null && now - b.lastUse >= this.settings.idleMs && now < b.deadline) {
        await this.release(b);
      }
    }
  }

  /** The lease keeps what was used; the rest goes back to the user's pool. */
  private async release(b: Book): Promise<void> {
    const slices = [b.spend, ...b.tokens.values()];
    if (b.leaseId === null || slices.every((s) => s.granted <= s.used)) return;
    for (const s of slices) s.granted = s.used;
    const body: Record<string, unknown> = { used: b.spend.used };
    if (b.tokens.size > 0) body.used_tokens = Object.fromEntries([...b.tokens].map(([m, s]) => [m, Math.ceil(s.used)]));
    try {
      await this.transport.request("POST", `/users/${encodeURIComponent(b.userId)}/leases/${b.leaseId}/release`, body);
    } catch (err) {
      // Not given back: it returns to the pool when it expires.
      if (!(err instanceof MeterApiError && err.status === 404)) this.warn(`giving back the lease of ${b.userId} failed`, err as Error);
    }
  }

  /**
   * What a request asks of one budget: nothing while it covers the call and holds at least
   * half a full ask; else a full ask, with the call's need as the least worth granting when
   * the budget cannot cover it.
   */
  private asked(b: Book, s: Slice, need: number, now: number): { need: number; want: number; short: boolean } {
    const left = this.balance(b, s, now);
    const short = left <= 0 || left < need;
    const full = this.full(b, s);
    if (!short && left >= full / 2) return { need: 0, want: 0, short };
    return { need: short ? need : 0, want: Math.max(need, full), short };
  }

  /**
   * What one request asks for: callsPerLease calls plus one per call in flight (the replica's
   * concurrency) and per caller waiting, or four round trips' worth of the spend rate measured
   * between the last two requests, whichever is more; so a top-up started at half of it arrives
   * before the lease runs out, however fast calls come or slow the service answers.
   */
  private full(b: Book, s: Slice): number {
    return Math.max(s.unit * (this.settings.callsPerLease + b.holds + b.joined), 4 * s.rate * b.roundTripMs);
  }

  private balance(b: Book, s: Slice, now: number): number {
    if (now >= b.deadline || now >= b.periodEndMs) return 0;
    return s.granted - s.used;
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

function refusal(reason: string, current: number, cap: number, message: string): GuardResult {
  return {
    status: "hard_gate",
    gate_reason: reason,
    usage_pct: cap > 0 ? Math.max(1, current / cap) : 1,
    current_value: current,
    limit_value: cap,
    message,
  };
}
