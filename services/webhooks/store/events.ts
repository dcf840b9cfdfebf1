import { DbStore, deleteInRounds, findByIds, insertIgnoringDuplicates, isDuplicateKeyError } from "@meter/lib/mongo";

/** An emitted webhook event: what every delivery of it sends. */
export interface EventDoc {
  /** "whevt_" + a UUID derived from (product, key); the envelope id and X-Service-Delivery header. */
  _id: string;
  product_id: string;
  /**
   * What makes the event happen once, unique per product: e.g.
   * "threshold:<user>:<period start>:<pct>", "gate:" + JSON of [user, reason, type, window start],
   * "summary:<type>:<period start>".
   */
  key: string;
  type: string;
  /**
   * JSON text of the envelope's `data`: kept as sent, because its keys include model names
   * ("gpt-4.1" in cost_by_model) that MongoDB field names cannot hold as they are.
   */
  data: string;
  created_at: Date;
  /** The endpoints subscribed when the event was emitted; re-emitting reaches these only. */
  endpoint_ids: string[];
}

export class EventStore extends DbStore {
  private readonly col = this.db.collection<EventDoc>("events");

  async init(): Promise<void> {
    await this.col.createIndex({ product_id: 1, key: 1 }, { unique: true });
    await this.col.createIndex({ created_at: 1 });
  }

  /** Deletes the events created before `cutoff`, except `keep`; returns how many. */
  async deleteBefore(cutoff: Date, keep: readonly string[]): Promise<number> {
    return deleteInRounds(this.col, { created_at: { $lt: cutoff }, _id: { $nin: [...keep] } });
  }

  /** Inserts the event unless its key was emitted before; returns the stored one either way. */
  async insertOnce(doc: EventDoc): Promise<{ event: EventDoc; created: boolean }> {
    try {
      await this.col.insertOne(doc);
      return { event: doc, created: true };
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      const existing = (await this.col.findOne({ _id: doc._id })) ?? (await this.col.findOne({ product_id: doc.product_id, key: doc.key }));
      if (!existing) throw err;
      return { event: existing, created: false };
    }
  }

  /** Inserts the events whose id is not stored yet. */
  async insertMany(docs: EventDoc[]): Promise<void> {
    await insertIgnoringDuplicates(this.col, docs);
  }

  /** The stored events among these ids. */
  getMany(ids: string[]): Promise<EventDoc[]> {
    return findByIds(this.col, ids);
  }

  get(id: string): Promise<EventDoc | null> {
    return this.col.findOne({ _id: id });
  }

  async exists(productId: string, key: string): Promise<boolean> {
    return (await this.col.countDocuments({ product_id: productId, key }, { limit: 1 })) > 0;
  }
}
