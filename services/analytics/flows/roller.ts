import type { Logger } from "@meter/lib/logger";
import { DayAccumulator } from "../domain/rollup.ts";
import type { Bucket, DirtyStore } from "../store/dirty.ts";
import type { BaseDoc, BaseStore } from "../store/bases.ts";
import { foldDay, HourFolds, type LedgerStore } from "../store/ledger.ts";
import type { RollupStore } from "../store/rollups.ts";

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
  /** Facts for days past the ledger window, kept as long as their day's rollup. */
  late: LedgerStore;
  bases: BaseStore;
  /** Days before this one may have lost their ledger to the retention job (jobs/retention.ts). */
  frozenBefore: () => string;
  dirty: DirtyStore;
  rollups: RollupStore;
  logger: Logger;
  /** How long a roller holds a day it recomputes before another may take it over. */
  leaseMs: number;
  faults?: FaultHooks;
  /** The clock that tells which ledger hours are still filling (HourFolds). */
  now?: () => Date;
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
  /** Whether the last pass left dirty days it saw (paced, leased elsewhere, or past `max`). */
  daysLeft = false;
  /** When each day may be recomputed next by a paced pass (epoch ms), by bucket id. */
  private readonly due = new Map<string, number>();
  /** The ledger hours this roller folded, reused while unchanged. */
  private readonly hours: HourFolds;

  constructor(private readonly opts: RollerOptions) {
    this.hours = new HourFolds(opts.now);
  }

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
    this.daysLeft = false;
    while (!this.halted && n < max) {
      const pending = await this.opts.dirty.pending();
      this.daysLeft = pending.size > 0;
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
   *
   * A day whose ledger is gone is computed from its base (written once, just before the
   * retention job deleted the ledger) plus the late facts stored after it. If the day was
   * frozen while we read its ledger, what we read may lack the part already deleted: the day
   * is marked again and computed once more, from its base.
   */
  private async recompute(bucket: Bucket, markIds: string[]): Promise<void> {
    const { ledger, late, bases, rollups, dirty } = this.opts;
    const acc = new DayAccumulator();
    const base = (await bases.read(bucket)) ?? (await this.adopt(bucket));
    if (base) {
      await bases.addTo(base, acc);
      await foldDay(bucket.productId, bucket.day, acc, { late, lateFolded: base.late_folded });
    } else {
      await foldDay(bucket.productId, bucket.day, acc, { ledger, late, hours: this.hours });
    }
    await rollups.write(bucket.productId, bucket.day, acc.result(), new Date());
    await this.opts.faults?.afterRollupWrite?.();
    // Frozen while we read its ledger: the marks stay, and the day is computed again from its base.
    if (!base && (await bases.read(bucket))) return;
    const cleared = await dirty.clear(markIds);
    if (cleared < markIds.length) await dirty.mark([bucket]);
  }

  /**
   * A day whose ledger was deleted before bases existed: its rollup then was final and is
   * its base. Recognised by having no ledger left, no base, and a rollup written without
   * late facts (`with_late` absent). Null for any other day.
   */
  private async adopt(bucket: Bucket): Promise<BaseDoc | null> {
    if (bucket.day >= this.opts.frozenBefore()) return null;
    const [doc] = await this.opts.rollups.readDays(bucket.productId, [bucket.day]);
    if (!doc || doc.with_late || (await this.opts.ledger.hasDay(bucket))) return null;
    const rollup = await this.opts.rollups.readFigures(bucket);
    if (!rollup || rollup.withLate) return null;
    await this.opts.bases.freeze(bucket, rollup.figures, 0, new Date());
    return this.opts.bases.read(bucket);
  }
}
