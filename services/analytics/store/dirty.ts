import { randomUUID } from "node:crypto";
import { collectionBacklog } from "@meter/lib/metrics";
import pMap from "p-map";
import { DbStore, deleteInRounds, takeLease } from "@meter/lib/mongo";

/**
 * Marks of product-days whose rollup may be older than their ledger. Marks are only ever
 * inserted (each with a fresh id) and deleted by id, never updated: that makes them exact on
 * any MongoDB-compatible store. A day is dirty while it has at least one mark; the collection
 * holds only pending work, so it stays small.
 */
export interface DirtyDoc {
  /** `<product_id>|<YYYY-MM-DD>|<random>` */
  _id: string;
  product_id: string;
  day: string;
}

export interface Bucket {
  productId: string;
  day: string;
}

/** Who is recomputing a day, so that replicas do not all recompute the same one at once. */
interface LeaseDoc {
  _id: string;
  owner: string;
  until: Date;
}

export const bucketId = (b: Bucket) => `${b.productId}|${b.day}`;

export class DirtyStore extends DbStore {
  private readonly marks = this.db.collection<DirtyDoc>("dirty_days");
  private readonly leases = this.db.collection<LeaseDoc>("roll_leases");

  /** The days marked and not yet rolled up (a metric's probe: how far the roll-ups are behind). */
  readonly backlog = collectionBacklog(this.marks, "day");

  /**
   * Takes the day for `ms` (a unique insert), taking over a lease that has expired; null when
   * another roller holds it. Leases only save duplicate work: correctness never rests on them.
   */
  lease(b: Bucket, ms: number): Promise<string | null> {
    return takeLease(this.leases, bucketId(b), ms, { holder: "owner", until: "until" });
  }

  async release(b: Bucket, owner: string): Promise<void> {
    await this.leases.deleteOne({ _id: bucketId(b), owner });
  }

  /** Adds one mark per distinct day. */
  async mark(buckets: Iterable<Bucket>): Promise<void> {
    const unique = new Map<string, Bucket>();
    for (const b of buckets) unique.set(bucketId(b), b);
    if (unique.size === 0) return;
    await this.marks.insertMany(
      [...unique].map(([id, b]) => ({ _id: `${id}|${randomUUID()}`, product_id: b.productId, day: b.day })),
    );
  }

  /** Pending marks grouped by day. */
  async pending(limit = 10_000): Promise<Map<string, { bucket: Bucket; markIds: string[] }>> {
    const out = new Map<string, { bucket: Bucket; markIds: string[] }>();
    for (const m of await this.marks.find({}).limit(limit).toArray()) {
      const bucket = { productId: m.product_id, day: m.day };
      const id = bucketId(bucket);
      if (!out.has(id)) out.set(id, { bucket, markIds: [] });
      out.get(id)!.markIds.push(m._id);
    }
    return out;
  }

  /**
   * Deletes these marks; returns how many were still there. One delete by `_id` each: on the
   * embedded database an `$in` scans every mark, and a backfill leaves marks on hundreds of days.
   */
  async clear(markIds: readonly string[]): Promise<number> {
    const deleted = await pMap(markIds, async (id) => (await this.marks.deleteOne({ _id: id })).deletedCount, { concurrency: 8 });
    return deleted.reduce((a, n) => a + n, 0);
  }

  /**
   * Deletes leases past their end: their holder died before releasing them. An expired lease
   * is taken over by the next roller anyway, so this changes nothing but the storage.
   */
  async sweepLeases(now: Date): Promise<number> {
    return deleteInRounds(this.leases, { until: { $lt: now } });
  }

  async count(): Promise<number> {
    return this.marks.countDocuments();
  }
}
