/**
 * The bounded delivery queue of usage and gate events. New events are dropped when it is
 * full. Batches are retried with backoff on network errors, 429 and 5xx and never on other
 * 4xx; the event ids make a retried batch count once on the service.
 */
import { MeterApiError, MeterAuthenticationError, MeterEventsDroppedError } from "./errors.ts";
import { addressHint, backoffMs, retryable, type Transport } from "./transport.ts";
import type { GateEvent, UsageEvent } from "./types.ts";

/** How soon a pass that found only held events looks again. */
const HELD_RETRY_MS = 250;

export interface QueueHooks {
  /** The service acknowledged these events. */
  delivered(events: readonly (UsageEvent | GateEvent)[], kind: "usage" | "gate"): void;
  /** These events will never be delivered (refused by the service). */
  discarded(events: readonly (UsageEvent | GateEvent)[]): void;
  /** True for an event that must wait (priced once its user's plan is known). */
  held(event: UsageEvent | GateEvent): boolean;
  /** Only held events of these users are left: get their plans. */
  stalled(userIds: ReadonlySet<string>): void;
  warn(message: string, err?: Error): void;
  /** A batch route answered 404: baseURL does not point at the API (say what to fix). */
  misaddressed(err: Error): void;
  /** A batch route answered 401/403: the key is refused (say so at error level). */
  keyRefused(err: MeterAuthenticationError): void;
  /** An event was queued after shutdown(): no timer sends it; the process's exit must, unless a flush() does first. */
  queuedAfterClose(): void;
}

export class EventQueue {
  private usage: UsageEvent[] = [];
  private gates: GateEvent[] = [];
  sent = 0;
  dropped = 0;
  rejected = 0;
  /** Batches answered 429 (the service is busy): kept and sent again after Retry-After. */
  busy = 0;
  private failures = 0;
  /** performance.now() (ms), as every deadline here: a wall clock stepped back (NTP, a VM resumed) stalls no retry. */
  private nextAttemptAt = 0;
  private running: Promise<boolean> | null = null;
  private warnedFull = false;
  private closed = false;
  private warnedClosed = false;
  /** Events a batch holds at most now: halved by each 413 (too large for the service), whole again once the queue empties. */
  private batchLimit = 0;

  constructor(
    private readonly transport: Transport,
    private readonly maxSize: number,
    private readonly maxBatch: number,
    private readonly hooks: QueueHooks,
  ) {}

  get size(): number {
    return this.usage.length + this.gates.length;
  }

  /** Events waiting for their user's plan before they can be priced and sent. */
  get held(): number {
    let n = 0;
    for (const e of this.usage) if (this.hooks.held(e)) n++;
    return n;
  }

  /** False when the queue is full and the event was dropped (counted; logged once per full spell). */
  push(kind: "usage", e: UsageEvent): boolean;
  push(kind: "gate", e: GateEvent): boolean;
  push(kind: "usage" | "gate", e: UsageEvent | GateEvent): boolean {
    if (this.closed) {
      // No timer sends it any more: the next flush() or shutdown() does (a serverless handler's next
      // invocation), or the process's exit.
      this.hooks.queuedAfterClose();
      if (!this.warnedClosed) {
        this.warnedClosed = true;
        this.hooks.warn("an event was recorded after shutdown(): it waits for the next flush() or shutdown(), or the process's exit, which sends it");
      }
    }
    if (this.size >= this.maxSize) {
      this.dropped++;
      if (!this.warnedFull) {
        this.warnedFull = true;
        const message = `event queue full (${this.maxSize}); new events are dropped until it drains`;
        this.hooks.warn(message, new MeterEventsDroppedError("queue_full", 1, message));
      }
      return false;
    }
    if (kind === "usage") this.usage.push(e as UsageEvent);
    else this.gates.push(e as GateEvent);
    return true;
  }

  /** After shutdown's delivery: a later event is said once (the next flush() or shutdown() sends it). */
  close(): void {
    this.closed = true;
  }

  /** Timer tick: one pass unless a backoff is running. */
  tick(now: number): void {
    if (this.size > 0 && now >= this.nextAttemptAt) void this.pass();
  }

  /**
   * Passes until the queue is empty or `deadline` (ms) is reached, waiting out backoffs in
   * between; stops early when `hopeless()` says no retry can succeed (a refused key). Events
   * that could not be delivered stay queued.
   */
  async drain(deadline: number, hopeless: () => boolean = () => false): Promise<boolean> {
    for (;;) {
      // A pass under way (a timer's) is waited for only until the deadline; one this starts sends
      // each batch with what is left of it as its timeout.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<false>((done) => {
        timer = setTimeout(() => done(false), Math.max(0, deadline - performance.now()));
        timer.unref?.();
      });
      const emptied = await Promise.race([this.pass(deadline), late]).finally(() => clearTimeout(timer));
      if (emptied) return true;
      if (performance.now() >= deadline || hopeless()) return false;
      // A backoff that ends at or after the deadline: no attempt fits in what is left (one started
      // at the deadline would only be cut off by it).
      if (this.nextAttemptAt >= deadline) return false;
      const wait = this.nextAttemptAt - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  }

  /** One pass over the queue (one at a time); true when it emptied the queue. */
  pass(deadline?: number): Promise<boolean> {
    this.running ??= this.send(deadline).finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async send(deadline?: number): Promise<boolean> {
    while (this.size > 0) {
      if (deadline !== undefined && performance.now() >= deadline) return false;
      const usage = await this.batch("usage", this.usage, deadline);
      // Turned away (an outage, a 429 and its Retry-After): the gate batch waits out the same
      // backoff, which its success would end. Usage events that only wait for their user's plan
      // hold the gate events back from nothing.
      if (usage === "failed") return false;
      const gates = await this.batch("gate", this.gates, deadline);
      if (usage !== "sent" || gates !== "sent") return false;
    }
    if (this.warnedFull) this.warnedFull = false;
    this.batchLimit = this.maxBatch;
    return true;
  }

  /**
   * Sends the head of one list: "sent" (or dropped as refused, or to be sent in halves), "held"
   * (every event waits for its user's plan) or "failed" (retryable; backoff set).
   */
  private async batch(kind: "usage" | "gate", list: (UsageEvent | GateEvent)[], deadline?: number): Promise<"sent" | "held" | "failed"> {
    if (list.length === 0) return "sent";
    const head: (UsageEvent | GateEvent)[] = [];
    const stalled = new Set<string>();
    for (const e of list) {
      if (this.hooks.held(e)) stalled.add(e.user_id);
      else if (head.push(e) >= (this.batchLimit || this.maxBatch)) break;
    }
    if (head.length === 0) {
      this.hooks.stalled(stalled);
      this.nextAttemptAt = performance.now() + HELD_RETRY_MS;
      return "held";
    }
    try {
      const timeoutMs = deadline === undefined ? undefined : Math.max(1, Math.min(this.transport.timeoutMs, deadline - performance.now()));
      await this.transport.request("POST", kind === "usage" ? "/events/batch" : "/gate-events/batch", head.map(wire), timeoutMs);
      remove(list, head);
      this.failures = 0;
      this.nextAttemptAt = 0;
      this.sent += head.length;
      this.hooks.delivered(head, kind);
      return "sent";
    } catch (err) {
      // Too large for the service (its 10 MiB a batch): sent again in halves; one event too large
      // on its own is refused below like any refused event.
      if (err instanceof MeterApiError && err.status === 413 && head.length > 1) {
        this.batchLimit = Math.ceil(head.length / 2);
        return "sent";
      }
      // 404 on a batch route is a wrong baseURL, not a bad event: keep the events and retry,
      // so they are delivered once the address is fixed (and the process restarted, or a proxy repaired).
      const misaddressed = err instanceof MeterApiError && err.status === 404;
      if (misaddressed && this.failures === 0) {
        const path = kind === "usage" ? "/events/batch" : "/gate-events/batch";
        this.hooks.misaddressed(
          new MeterApiError(404, `POST ${this.transport.base}${path} answered 404 (${err.detail}): ${addressHint(this.transport.base)}; events stay queued until it answers`),
        );
      }
      // A refused key is fixed by its owner, not by time: the events wait for it, loudly.
      const refused = err instanceof MeterAuthenticationError;
      if (refused) this.hooks.keyRefused(err);
      if (misaddressed || refused || retryable(err)) {
        if (err instanceof MeterApiError && err.status === 429) this.busy++;
        this.failures++;
        this.nextAttemptAt = performance.now() + backoffMs(this.failures, err);
        // Once per outage, not once per attempt.
        if (this.failures === 1 && !misaddressed && !refused) this.hooks.warn(`delivering ${kind} events failed; retrying with backoff`, err as Error);
        return "failed";
      }
      // A 422 that names events refuses only those: the rest of the batch goes again.
      const dropped = namedEvents(err, head) ?? head;
      remove(list, dropped);
      this.rejected += dropped.length;
      this.hooks.discarded(dropped);
      this.hooks.warn(`the service refused ${dropped.length} ${kind} events; they are dropped`, err as Error);
      return "sent";
    }
  }
}

/** The events of `head` a 422 names ("body/<index>/<field> ..." in its detail), or null. */
function namedEvents<T>(err: unknown, head: readonly T[]): T[] | null {
  if (!(err instanceof MeterApiError) || err.status !== 422) return null;
  const named = new Set([...err.detail.matchAll(/(?:^|; )body\/(\d+)\//g)].map((m) => Number(m[1])));
  const events = head.filter((_, i) => named.has(i));
  return events.length > 0 ? events : null;
}

/** Removes `sent` from `list` in place, keeping the order of the rest. */
function remove<T>(list: T[], sent: readonly T[]): void {
  const gone = new Set(sent);
  let j = 0;
  for (const e of list) if (!gone.has(e)) list[j++] = e;
  list.length = j;
}

/** The wire form: the callback form without `synced`. */
function wire(e: UsageEvent | GateEvent): object {
  if (!("synced" in e)) return e;
  const { synced: _, ...rest } = e;
  return rest;
}
