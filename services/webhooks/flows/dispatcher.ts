import { retryDelay, runAttempt, type Busy } from "./attempt.ts";
import type { WebhooksDeps } from "../deps.ts";
import { fanOut } from "./emit.ts";
import type { QueueEntry } from "../store/queue.ts";

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

/** Entries the dispatcher keeps in view at most (earliest due first); the rest wait for a later read. */
const VIEW_LIMIT = 100_000;

/**
 * The delivery worker of one replica: a fair queue over products (README, "No noisy
 * neighbours"). Each round visits every product with due work, in a rotating order, and gives
 * it at most `fanoutPerRound` events to fan out and as many attempts as its caps leave free;
 * attempts run in the background and a finished one starts the next round. A product whose
 * endpoint hangs or fails holds at most `perProduct` slots (and one endpoint `perEndpoint`), so
 * the other products' deliveries start as soon as they are due, whatever its backlog.
 *
 * Rounds work from a view of the queue in memory: the work this replica queues or reschedules
 * itself goes into it directly, and the whole queue is read again every `pollMs` (not sooner
 * than four times the last read took), for the work of other replicas and of a restart. A
 * round therefore reads nothing: its cost does not grow with a neighbour's backlog. The view
 * may be stale; every attempt starts from its delivery (attempt.ts), the truth.
 */
export class Dispatcher {
  private readonly view = new Map<string, { entry: QueueEntry; seen: number }>();
  private readonly inFlight = new Map<string, { entry: QueueEntry; run: Promise<void> }>();
  private readonly perProduct = new Map<string, number>();
  private readonly perEndpoint = new Map<string, number>();
  /** Entries that could not run (database error, claim held elsewhere), and when to retry. */
  private readonly waiting = new Map<string, { failures: number; until: number }>();
  private timer: NodeJS.Timeout | undefined;
  private loop: Promise<void> | undefined;
  private reading: Promise<void> | undefined;
  private again = false;
  private running = false;
  private turn = 0;
  /** Counts changes to the view, so a read replaces only what it saw. */
  private clock = 0;
  private nextRead = 0;

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

  /** Takes entries this replica just queued, and runs a round for them. */
  add(entries: QueueEntry[]): void {
    for (const entry of entries) this.view.set(entry._id, { entry, seen: ++this.clock });
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
    await Promise.race([Promise.allSettled([this.loop, this.reading, ...[...this.inFlight.values()].map((f) => f.run)]), grace]);
    clearTimeout(timer);
  }

  private async rounds(): Promise<void> {
    do {
      this.again = false;
      // The read runs beside the rounds: a round never waits for it.
      if (!this.reading && Date.now() >= this.nextRead) {
        this.reading = this.read()
          .catch((err) => this.deps.logger.warn({ err }, "reading the delivery queue failed; will retry"))
          .finally(() => {
            this.reading = undefined;
            this.kick();
          });
      }
      try {
        if (await this.round()) this.again = true;
      } catch (err) {
        this.deps.logger.warn({ err }, "webhook dispatch round failed; will retry");
      }
    } while (this.again && this.running);
  }

  /** Replaces the view with the queue as stored, keeping what changed here during the read. */
  private async read(): Promise<void> {
    const started = Date.now();
    this.nextRead = started + this.pollMs;
    const mark = this.clock;
    const stored = await this.deps.queue.all(VIEW_LIMIT);
    for (const [id, v] of this.view) if (v.seen <= mark) this.view.delete(id);
    for (const entry of stored) {
      const mine = this.view.get(entry._id);
      if (!mine || mine.seen <= mark) this.view.set(entry._id, { entry, seen: mark });
    }
    for (const id of this.waiting.keys()) if (!this.view.has(id)) this.waiting.delete(id);
    const took = Date.now() - started;
    this.nextRead = Date.now() + Math.max(this.pollMs, 4 * took);
  }

  /** One visit of every product with due work; true when it started or fanned out anything. */
  private async round(): Promise<boolean> {
    const now = this.deps.now().getTime();
    const clock = Date.now();
    const due = new Map<string, { fanouts: QueueEntry[]; attempts: QueueEntry[] }>();
    for (const { entry } of this.view.values()) {
      if (entry.due_at.getTime() > now || this.inFlight.has(entry._id)) continue;
      const w = this.waiting.get(entry._id);
      if (w && w.until > clock) continue;
      let d = due.get(entry.product_id);
      if (!d) due.set(entry.product_id, (d = { fanouts: [], attempts: [] }));
      (entry.kind === "fanout" ? d.fanouts : d.attempts).push(entry);
    }
    const products = [...due.keys()].sort();
    if (products.length === 0) return false;
    const first = this.turn++ % products.length;
    let progressed = false;
    for (const productId of [...products.slice(first), ...products.slice(0, first)]) {
      if (!this.running) break;
      const { fanouts, attempts } = due.get(productId)!;
      if (fanouts.length > 0) {
        const batch = fanouts.sort(byDue).slice(0, this.limits.fanoutPerRound);
        try {
          const created = await fanOut(this.deps, batch);
          for (const e of batch) this.view.delete(e._id);
          this.add(created);
          progressed = true;
        } catch (err) {
          // The database failed: this product's fan-out is tried again at the next poll, and
          // the other products' work goes on.
          this.deps.logger.warn({ err, productId }, "webhook fan-out failed; will retry");
          for (const e of batch) this.waiting.set(e._id, { failures: 1, until: Date.now() + this.pollMs });
        }
      }
      if (this.startAttempts(productId, attempts.sort(byDue))) progressed = true;
    }
    return progressed;
  }

  private free(productId: string): number {
    return Math.min(this.limits.perProduct - (this.perProduct.get(productId) ?? 0), this.limits.concurrency - this.inFlight.size);
  }

  private startAttempts(productId: string, entries: QueueEntry[]): boolean {
    let started = false;
    for (const entry of entries) {
      if (this.free(productId) <= 0) break;
      const endpointId = entry.endpoint_id ?? "";
      if ((this.perEndpoint.get(endpointId) ?? 0) >= this.limits.perEndpoint) continue;
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
    let next: Date | null | Busy | "failed";
    try {
      next = await runAttempt(this.deps, entry);
    } catch (err) {
      this.deps.logger.warn({ err, entry: entry._id }, "webhook attempt could not run; will retry");
      next = "failed";
    }
    if (next === "failed" || (next !== null && !(next instanceof Date))) {
      const failures = (this.waiting.get(entry._id)?.failures ?? 0) + 1;
      let until = Date.now() + retryDelay(failures, this.deps.timeScale);
      // A claim nobody will release (its holder died) lapses at a known time: try right after
      // it rather than up to one back-off step later (the steps double to minutes).
      if (next !== "failed" && next.busyUntil) until = Math.min(until, Date.now() + Math.max(0, next.busyUntil.getTime() - this.deps.now().getTime()) + 50);
      this.waiting.set(entry._id, { failures, until });
      return;
    }
    this.waiting.delete(entry._id);
    if (next === null) this.view.delete(entry._id);
    else this.view.set(entry._id, { entry: { ...entry, due_at: next }, seen: ++this.clock });
  }
}

function byDue(a: QueueEntry, b: QueueEntry): number {
  return a.due_at.getTime() - b.due_at.getTime();
}

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 0) - 1;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}
