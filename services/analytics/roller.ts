import type { Logger } from "@meter/lib/logger";
import { DayAccumulator } from "./rollup.ts";
import type { Bucket, DirtyStore } from "./store/dirty.ts";
import type { LedgerStore } from "./store/ledger.ts";
import type { RollupStore } from "./store/rollups.ts";

/** Points where tests stop the service as if it crashed there. Never set in production. */
export interface FaultHooks {
  /** RecordEvents: facts stored in the ledger, days not yet marked dirty a second time. */
  afterLedgerWrite?(): void | Promise<void>;
  /** Roller: a day's rollup written, its dirty marker not yet cleared. */
  afterRollupWrite?(): void | Promise<void>;
}

/**
 * The roll job leaves a day alone for this many times its last recompute after it.
 * A recompute reads the whole day, so a day taking many events at once would otherwise be
 * recomputed back to back and hold the database for the writers; this keeps the roller's
 * share of the time at most 1 / (1 + PACE) per day, and freshness proportional to a day's
 * size (a small day is still recomputed within the interval).
 */
const PACE = 3;

export interface RollerOptions {
  ledger: LedgerStore;
  dirty: DirtyStore;
  rollups: RollupStore;
  logger: Logger;
  /** How long a roller holds a day it recomputes before another may take it over. */
  leaseMs: number;
  faults?: FaultHooks;
}

/**
 * Brings dirty days' rollups up to date by recomputing each from the ledger and replacing
 * it: applying the same facts twice gives the same rollup, so no fact is counted twice, and
 * a day stays dirty until a recompute that started after its last fact was stored completes.
 * Replicas need no coordination: two rolling the same day only duplicate work. Run by the
 * `analytics.roll` job (jobs/roll.ts), by the retention job, and by hand in tests.
 */
export class Roller {
  private halted = false;
  /** When each day may be recomputed next by a paced pass (epoch ms), by bucket id. */
  private readonly due = new Map<string, number>();

  constructor(private readonly opts: RollerOptions) {}

  /** Stops between two days (shutdown); a pass under way returns early. */
  halt(): void {
    this.halted = true;
  }

  /**
   * Recomputes dirty days until none is left (or `max` were done); returns how many.
   * `paced`: skip days recomputed too recently (see PACE); they stay dirty for a later pass.
   */
  async rollPending(max = 1_000, paced = false, progress?: () => Promise<void>): Promise<number> {
    let n = 0;
    for (const [id, at] of this.due) if (at <= Date.now()) this.due.delete(id);
    while (!this.halted && n < max) {
      const pending = await this.opts.dirty.pending();
      let done = 0;
      for (const [id, { bucket, markIds }] of pending) {
        if (this.halted) break;
        if (paced && (this.due.get(id) ?? 0) > Date.now()) continue;
        const owner = await this.opts.dirty.lease(bucket, this.opts.leaseMs);
        if (!owner) continue; // another roller is on it
        const started = Date.now();
        await this.recompute(bucket, markIds);
        const took = Date.now() - started;
        this.due.set(id, Date.now() + PACE * took);
        // On failure the lease is kept until it expires, as after a crash.
        await this.opts.dirty.release(bucket, owner);
        done++;
        await progress?.();
      }
      n += done;
      if (done === 0) break;
    }
    return n;
  }

  /**
   * The marks were listed before the ledger is read, so the rollup written covers every fact
   * stored before any of them. They are then deleted by id; if another roller deleted some
   * first, its rollup may be newer than ours and ours may have overwritten it, so the day is
   * marked again and computed once more. On failure the marks stay, and the day with them.
   */
  private async recompute(bucket: Bucket, markIds: string[]): Promise<void> {
    const acc = new DayAccumulator();
    await this.opts.ledger.foldDay(bucket.productId, bucket.day, acc);
    await this.opts.rollups.write(bucket.productId, bucket.day, acc.result(), new Date());
    await this.opts.faults?.afterRollupWrite?.();
    const cleared = await this.opts.dirty.clear(markIds);
    if (cleared < markIds.length) await this.opts.dirty.mark([bucket]);
  }
}
