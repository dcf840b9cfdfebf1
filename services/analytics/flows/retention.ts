import { DayAccumulator } from "../domain/rollup.ts";
import { bucketId } from "../store/dirty.ts";
import { foldDay } from "../store/ledger.ts";
import type { AnalyticsDeps } from "../deps.ts";
import { firstRollupDay, frozenBefore, type RetentionPolicy } from "../domain/retention-policy.ts";

export interface RetentionReport {
  /** Days whose ledger went, a base written for each first. */
  frozenDays: number;
  ledgerSegments: number;
  dayRollups: number;
  lateSegments: number;
  leases: number;
  windowAnswers: number;
}

/** Window answers not computed again for this long go (a window's days shift daily, so its key changes). */
const ANSWERS_KEPT_MS = 2 * 86_400_000;

/**
 * One retention pass. Rolls up every dirty day first, so a day's rollup covers its whole
 * ledger before that ledger goes. Segments are deleted one day behind the first open day: a
 * RecordEvents call that began before midnight may still store facts for the day that just
 * closed, and it is done long before the next pass. Before a day's segments go, its base is
 * computed from them and the late facts stored so far, and stored once (BaseStore.freeze):
 * from then on the day is recomputed from its base and later late facts. Days still marked
 * dirty keep their segments until a later pass. Late facts and bases go with their day's
 * rollup. Idempotent; any replica may run it.
 */
export async function runRetention(deps: AnalyticsDeps, p: RetentionPolicy, now: Date): Promise<RetentionReport> {
  await deps.roller.rollPending(Infinity);
  const before = frozenBefore(now, p);
  const rollupsFrom = firstRollupDay(now, p);
  const dirty = new Set([...(await deps.dirty.pending()).values()].map((x) => bucketId(x.bucket)));
  let frozenDays = 0;
  let ledgerSegments = 0;
  for (const b of await deps.ledger.daysBefore(before)) {
    if (dirty.has(bucketId(b))) continue;
    if (b.day >= rollupsFrom && !(await deps.bases.read(b))) {
      const acc = new DayAccumulator();
      const lateFolded = await foldDay(b.productId, b.day, acc, { ledger: deps.ledger, late: deps.late });
      await deps.bases.freeze(b, acc.result(), lateFolded, now);
      frozenDays++;
    }
    ledgerSegments += await deps.ledger.deleteDay(b);
  }
  const dayRollups = await deps.rollups.deleteBefore(rollupsFrom);
  const lateSegments = await deps.late.deleteBefore(rollupsFrom);
  await deps.bases.deleteBefore(rollupsFrom);
  const leases = await deps.dirty.sweepLeases(now);
  const windowAnswers = await deps.windowAnswers.deleteComputedBefore(new Date(now.getTime() - ANSWERS_KEPT_MS));
  return { frozenDays, ledgerSegments, dayRollups, lateSegments, leases, windowAnswers };
}
