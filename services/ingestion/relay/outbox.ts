import type { Collection, Document } from "mongodb";
import type { Logger } from "@meter/lib/logger";

/**
 * One transactional outbox: documents written with `flag` set are handed to a peer in
 * batches and the flag is cleared only after the peer acknowledged them. A crash between
 * the two resends the batch; the receivers are idempotent on the ids, so a repeat is
 * harmless and nothing is ever dropped.
 */
export interface Outbox<D extends Document & { _id: string }> {
  name: string;
  collection: Collection<D>;
  flag: string;
  send(docs: D[]): Promise<void>;
}

export interface RelayOptions {
  /** Pause between rounds when all outboxes are drained. */
  intervalMs: number;
  /** Longest wait before retrying an outbox whose peer keeps failing. */
  maxBackoffMs: number;
  batchSize: number;
  logger: Logger;
}

interface State {
  failures: number;
  retryAt: number;
}

/** Delay before retry number `failures` (1, 2, ...): doubling from the interval, capped. */
export function backoffMs(failures: number, intervalMs: number, maxMs: number): number {
  return Math.min(maxMs, intervalMs * 2 ** Math.min(failures, 20));
}

export class Relay {
  private readonly state = new Map<string, State>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;

  constructor(
    private readonly outboxes: Outbox<any>[],
    private readonly opts: RelayOptions,
    /** Extra work run every round (the recovery sweep). */
    private readonly chores: { name: string; run(): Promise<void> }[] = [],
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(ms: number) {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.round().finally(() => this.schedule(this.opts.intervalMs));
    }, ms);
    this.timer.unref();
  }

  /** One pass over every outbox and chore; errors are logged and retried later. */
  async round(): Promise<void> {
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
        await this.drain(box);
        st.failures = 0;
      } catch (err) {
        st.failures++;
        const wait = backoffMs(st.failures, this.opts.intervalMs, this.opts.maxBackoffMs);
        st.retryAt = Date.now() + wait;
        this.opts.logger.warn({ err: (err as Error).message, outbox: box.name, failures: st.failures, retryInMs: wait }, "handover failed; will retry");
      }
    }
  }

  private async drain(box: Outbox<any>): Promise<void> {
    for (let rounds = 0; rounds < 100 && !this.stopped; rounds++) {
      const docs = await box.collection.find({ [box.flag]: true }).limit(this.opts.batchSize).toArray();
      if (docs.length === 0) return;
      await box.send(docs);
      await box.collection.updateMany({ _id: { $in: docs.map((d) => d._id) } }, { $unset: { [box.flag]: "" } });
      if (docs.length < this.opts.batchSize) return;
    }
  }
}
