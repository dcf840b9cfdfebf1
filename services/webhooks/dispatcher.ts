import { retryDelay, runAttempt } from "./attempt.ts";
import type { WebhooksDeps } from "./deps.ts";
import { fanOut } from "./emit.ts";
import type { QueueEntry } from "./store/queue.ts";

/** How much of a replica's delivery work one product (and one endpoint) can hold at once. */
export interface DispatchLimits {
  /** Attempts in flight in this replica, all products together. */
  concurrency: number;
  /** Attempts in flight in this replica for one product. */
  perProduct: number;
  /** Attempts in flight in this replica for one endpoint. */
  perEndpoint: number;
  /** Events one product gets fanned out per round before the next product's turn. */
  fanoutPerRound: number;
}

export const DEFAULT_DISPATCH_LIMITS: DispatchLimits = { concurrency: 32, perProduct: 4, perEndpoint: 2, fanoutPerRound: 10 };

/**
 * The delivery worker of one replica: a fair queue over products (README, "No noisy
 * neighbours"). Each round visits every product with due work, in a rotating order, and gives
 * it at most `fanoutPerRound` events to fan out and as many attempts as its caps leave free;
 * attempts run in the background and a finished one starts the next round. A product whose
 * endpoint hangs or fails holds at most `perProduct` slots (and one endpoint `perEndpoint`), so
 * the other products' deliveries start as soon as they are due, whatever its backlog.
 * Rounds run every `pollMs`, and at once when a hand-over queued work or a slot came free.
 */
export class Dispatcher {
  private readonly inFlight = new Map<string, { entry: QueueEntry; run: Promise<void> }>();
  private readonly perProduct = new Map<string, number>();
  private readonly perEndpoint = new Map<string, number>();
  /** Entries that could not run (database error, claim held elsewhere), and when to retry. */
  private readonly waiting = new Map<string, { productId: string; failures: number; until: number }>();
  private timer: NodeJS.Timeout | undefined;
  private loop: Promise<void> | undefined;
  private again = false;
  private running = false;
  private turn = 0;

  constructor(
    private readonly deps: WebhooksDeps,
    private readonly limits: DispatchLimits,
    private readonly pollMs: number,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.timer = setInterval(() => this.kick(), this.pollMs);
    this.timer.unref();
    this.kick();
  }

  /** Runs a round now, or right after the one in progress. */
  kick(): void {
    if (!this.running) return;
    if (this.loop) {
      this.again = true;
      return;
    }
    this.loop = this.rounds().finally(() => (this.loop = undefined));
  }

  /** Stops starting work, then lets the attempts in flight finish for up to `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    if (!this.running) return;
    this.running = false;
    clearInterval(this.timer);
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
    await Promise.race([Promise.allSettled([this.loop, ...[...this.inFlight.values()].map((f) => f.run)]), grace]);
    clearTimeout(timer);
  }

  private async rounds(): Promise<void> {
    do {
      this.again = false;
      try {
        if (await this.round()) this.again = true;
      } catch (err) {
        // The database failed between attempts: the next poll tries again.
        this.deps.logger.warn({ err }, "webhook dispatch round failed; will retry");
      }
    } while (this.again && this.running);
  }

  /** One visit of every product with due work; true when it started or fanned out anything. */
  private async round(): Promise<boolean> {
    const now = this.deps.now();
    const clock = Date.now();
    for (const [id, w] of this.waiting) if (w.until < clock - 10 * 60_000) this.waiting.delete(id);
    const products = await this.deps.queue.dueProducts(now);
    if (products.length === 0) return false;
    products.sort();
    const first = this.turn++ % products.length;
    let progressed = false;
    for (const productId of [...products.slice(first), ...products.slice(0, first)]) {
      if (!this.running) break;
      const fanouts = await this.deps.queue.due(productId, "fanout", now, this.limits.fanoutPerRound);
      if (fanouts.length > 0) {
        await fanOut(this.deps, fanouts);
        progressed = true;
      }
      if (this.startAttempts(productId, await this.dueAttempts(productId, now, clock))) progressed = true;
    }
    return progressed;
  }

  private free(productId: string): number {
    return Math.min(this.limits.perProduct - (this.perProduct.get(productId) ?? 0), this.limits.concurrency - this.inFlight.size);
  }

  private async dueAttempts(productId: string, now: Date, clock: number): Promise<QueueEntry[]> {
    const free = this.free(productId);
    if (free <= 0) return [];
    const ids = [...this.inFlight.values()].filter((f) => f.entry.product_id === productId).map((f) => f.entry._id);
    for (const [id, w] of this.waiting) if (w.productId === productId && w.until > clock) ids.push(id);
    const endpoints = [...this.perEndpoint].filter(([, n]) => n >= this.limits.perEndpoint).map(([id]) => id);
    return this.deps.queue.due(productId, "attempt", now, free, { ids, endpoints });
  }

  private startAttempts(productId: string, entries: QueueEntry[]): boolean {
    let started = false;
    for (const entry of entries) {
      const endpointId = entry.endpoint_id ?? "";
      if (this.free(productId) <= 0) break;
      if ((this.perEndpoint.get(endpointId) ?? 0) >= this.limits.perEndpoint || this.inFlight.has(entry._id)) continue;
      this.perProduct.set(productId, (this.perProduct.get(productId) ?? 0) + 1);
      this.perEndpoint.set(endpointId, (this.perEndpoint.get(endpointId) ?? 0) + 1);
      const run = this.attempt(entry).finally(() => {
        this.inFlight.delete(entry._id);
        decrement(this.perProduct, productId);
        decrement(this.perEndpoint, endpointId);
        this.kick();
      });
      this.inFlight.set(entry._id, { entry, run });
      started = true;
    }
    return started;
  }

  private async attempt(entry: QueueEntry): Promise<void> {
    let outcome: "done" | "busy" | "failed";
    try {
      outcome = await runAttempt(this.deps, entry);
    } catch (err) {
      this.deps.logger.warn({ err, entry: entry._id }, "webhook attempt could not run; will retry");
      outcome = "failed";
    }
    if (outcome === "done") {
      this.waiting.delete(entry._id);
      return;
    }
    const failures = (this.waiting.get(entry._id)?.failures ?? 0) + 1;
    this.waiting.set(entry._id, { productId: entry.product_id, failures, until: Date.now() + retryDelay(failures, this.deps.timeScale) });
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 0) - 1;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}
