import type { Logger } from "@meter/lib/logger";
import { computeDay } from "./rollup.ts";
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

/** Days recomputed per background pass before the loop yields. */
const PASS_MAX = 200;

/**
 * The background loop leaves a day alone for this many times its last recompute after it.
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
  /** Pause between passes when idle; 0 turns the background loop off (bench, tests). */
  intervalMs: number;
  /** How long a roller holds a day it recomputes before another may take it over. */
  leaseMs: number;
  faults?: FaultHooks;
}

/**
 * Brings dirty days' rollups up to date by recomputing each from the ledger and replacing
 * it: applying the same facts twice gives the same rollup, so no fact is counted twice, and
 * a day stays dirty until a recompute that started after its last fact was stored completes.
 * Replicas need no coordination: two rolling the same day only duplicate work.
 */
export class Roller {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  /** The background loop is on. */
  private active = false;
  private halted = false;
  /** Background loop: when each day may be recomputed next (epoch ms), by bucket id. */
  private readonly due = new Map<string, number>();

  constructor(private readonly opts: RollerOptions) {}

  start(): void {
    if (this.opts.intervalMs <= 0) return;
    this.active = true;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.active = false;
    this.halted = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** New facts arrived: run a pass now rather than at the next tick. */
  kick(): void {
    if (!this.active) return;
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      let wait = this.opts.intervalMs;
      this.running = this.rollPending(PASS_MAX, true)
        .then((n) => {
          if (n >= PASS_MAX) this.again = true;
          // A day held back by pacing is picked up when due, not only at the next kick.
          const soonest = Math.min(...this.due.values()) - Date.now();
          if (soonest > 0 && soonest < wait) wait = soonest;
        })
        .catch((err) => this.opts.logger.error({ err }, "rolling up failed; will retry"))
        .finally(() => {
          this.running = undefined;
          if (!this.active) return;
          const now = this.again;
          this.again = false;
          this.schedule(now ? 0 : wait);
        });
    }, ms);
    this.timer.unref?.();
  }

  /**
   * Recomputes dirty days until none is left (or `max` were done); returns how many.
   * `paced`: skip days recomputed too recently (see PACE); they stay dirty for a later pass.
   */
  async rollPending(max = 1_000, paced = false): Promise<number> {
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
    const facts = await this.opts.ledger.readDay(bucket.productId, bucket.day);
    await this.opts.rollups.write(bucket.productId, bucket.day, computeDay(facts.usage, facts.gates), new Date());
    await this.opts.faults?.afterRollupWrite?.();
    const cleared = await this.opts.dirty.clear(markIds);
    if (cleared < markIds.length) await this.opts.dirty.mark([bucket]);
  }
}
