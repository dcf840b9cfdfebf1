import type { Collection } from "mongodb";
import type { Logger } from "@meter/lib/logger";
import { payloadsOf, type OutboxEntry } from "../store/outbox.ts";

/**
 * One handover to a peer: outbox entries of one kind are sent in batches and deleted only
 * after the peer acknowledged them. A crash between the two resends the batch; receivers
 * are idempotent on the ids, so a repeat is harmless and nothing is ever dropped. A peer
 * that fails (down, or not implementing the call yet) only delays the handover.
 */
export interface Outbox {
  name: string;
  collection: Collection<OutboxEntry>;
  kind: OutboxEntry["kind"];
  /** Called with at most `batchSize` payloads at a time. */
  send(payloads: Record<string, any>[]): Promise<void>;
}

export interface RelayOptions {
  /** First backoff of a failing outbox (also the repeating job's interval, jobs/relay.ts). */
  intervalMs: number;
  /** Longest wait before retrying an outbox whose peer keeps failing. */
  maxBackoffMs: number;
  batchSize: number;
  logger: Logger;
}

/** Delay before retry number `failures` (1, 2, ...): doubling from the interval, capped. */
export function backoffMs(failures: number, intervalMs: number, maxMs: number): number {
  return Math.min(maxMs, intervalMs * 2 ** Math.min(failures, 20));
}

/**
 * The relay's work, one round at a time: run by the Agenda job in jobs/relay.ts (repeating
 * every `intervalMs`, and kicked when entries are written). Backoff is kept per process: an
 * outbox whose peer failed is skipped by this process's rounds until its retry time.
 */
export class Relay {
  private readonly state = new Map<string, { failures: number; retryAt: number }>();
  private stopped = false;

  constructor(
    private readonly outboxes: Outbox[],
    private readonly opts: RelayOptions,
    /** Other work run every round (the recovery sweep). */
    private readonly chores: { name: string; run(): Promise<unknown> }[] = [],
  ) {}

  /** Ends the current round after the entry being sent (shutdown). */
  halt(): void {
    this.stopped = true;
  }

  /** One pass over every chore and outbox; failures are logged and retried later. */
  async round(progress: () => Promise<unknown> = async () => {}): Promise<void> {
    for (const chore of this.chores) {
      try {
        await chore.run();
      } catch (err) {
        this.opts.logger.warn({ err, chore: chore.name }, "background chore failed; will retry");
      }
    }
    for (const box of this.outboxes) {
      const st = this.state.get(box.name) ?? { failures: 0, retryAt: 0 };
      this.state.set(box.name, st);
      if (Date.now() < st.retryAt) continue;
      try {
        await this.drain(box, progress);
        st.failures = 0;
      } catch (err) {
        st.failures++;
        const wait = backoffMs(st.failures, this.opts.intervalMs, this.opts.maxBackoffMs);
        st.retryAt = Date.now() + wait;
        this.opts.logger.warn(
          { err: (err as Error).message, outbox: box.name, failures: st.failures, retryInMs: wait },
          "handover failed; will retry",
        );
      }
    }
  }

  /** Sends entries one at a time, in chunks; an entry is deleted once all of it was acknowledged. */
  private async drain(box: Outbox, progress: () => Promise<unknown>): Promise<void> {
    for (let rounds = 0; rounds < 100 && !this.stopped; rounds++) {
      const entries = await box.collection.find({ kind: box.kind }).limit(20).toArray();
      if (entries.length === 0) return;
      for (const e of entries) {
        const payloads = payloadsOf(e);
        for (let i = 0; i < payloads.length; i += this.opts.batchSize) {
          await box.send(payloads.slice(i, i + this.opts.batchSize));
        }
        await box.collection.deleteOne({ _id: e._id });
        await progress();
      }
      if (entries.length < 20) return;
    }
  }
}
