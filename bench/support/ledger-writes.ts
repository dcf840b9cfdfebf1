import type { Db } from "mongodb";
import { DirtyStore } from "../../services/analytics/store/dirty.ts";
import { LedgerStore, type LedgerFact } from "../../services/analytics/store/ledger.ts";

/**
 * The writes RecordEvents makes (day marks, ledger segments, day marks again), without the
 * gRPC hop and without its 10,000-fact limit: the fastest faithful way to seed analytics.
 * The stored documents are exactly those RecordEvents would store for the same facts.
 */
export class LedgerWriter {
  private readonly ledger: LedgerStore;
  private readonly dirty: DirtyStore;

  constructor(db: Db) {
    this.ledger = new LedgerStore(db);
    this.dirty = new DirtyStore(db);
  }

  async write(facts: LedgerFact[]): Promise<void> {
    const buckets = facts.map((f) => ({ productId: f.productId, day: f.timestamp.toISOString().slice(0, 10) }));
    await this.dirty.mark(buckets);
    await this.ledger.write(facts);
    await this.dirty.mark(buckets);
  }
}
