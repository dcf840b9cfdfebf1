import { DbStore, insertIgnoringDuplicates } from "@meter/lib/mongo";

/**
 * Work waiting for the dispatcher (flows/dispatcher.ts): an event to fan out into deliveries, or the
 * next attempt of a pending delivery. The entry is a pointer; the event and the delivery stay
 * the truth (an entry that disagrees with its delivery is corrected when picked). Entries are
 * deleted as soon as their work is done, so this collection holds only what is pending, and
 * the dispatcher's scans cost what is pending, not the 30-day delivery log.
 */
export interface QueueEntry {
  /** "fanout:<event id>" or "attempt:<delivery id>": one entry per event or delivery. */
  _id: string;
  kind: "fanout" | "attempt";
  product_id: string;
  /** The event (fanout) or the delivery (attempt). */
  ref: string;
  /** attempt entries: the endpoint, for the per-endpoint cap. */
  endpoint_id: string | null;
  /** Not before. */
  due_at: Date;
}

export function fanoutEntry(productId: string, eventId: string, at: Date): QueueEntry {
  return { _id: `fanout:${eventId}`, kind: "fanout", product_id: productId, ref: eventId, endpoint_id: null, due_at: at };
}

export function attemptEntry(productId: string, endpointId: string, deliveryId: string, at: Date): QueueEntry {
  return { _id: `attempt:${deliveryId}`, kind: "attempt", product_id: productId, ref: deliveryId, endpoint_id: endpointId, due_at: at };
}

export class QueueStore extends DbStore {
  readonly col = this.db.collection<QueueEntry>("delivery_queue");

  async init(): Promise<void> {
    await this.col.createIndex({ due_at: 1 });
    await this.col.createIndex({ product_id: 1, kind: 1, due_at: 1 });
    await this.col.createIndex({ endpoint_id: 1 });
  }

  /** Adds entries; an entry that exists already (same event or delivery) is kept as it is. */
  async put(entries: QueueEntry[]): Promise<void> {
    await insertIgnoringDuplicates(this.col, entries);
  }

  /**
   * Every entry, earliest due first, up to `limit`: what the dispatcher schedules from until its
   * next read. One read for everything, because on the embedded database any filter other than
   * `_id` reads the whole collection anyway (about 0.1-0.5 s at 4,000 entries).
   */
  all(limit: number): Promise<QueueEntry[]> {
    return this.col.find({}).sort({ due_at: 1 }).limit(limit).toArray();
  }

  /** The events whose fan-out is still queued. */
  async fanoutEventIds(): Promise<string[]> {
    return (await this.col.find({ kind: "fanout" }, { projection: { ref: 1 } }).toArray()).map((e) => e.ref);
  }

  async reschedule(id: string, at: Date): Promise<void> {
    await this.col.updateOne({ _id: id }, { $set: { due_at: at } });
  }

  async remove(ids: string[]): Promise<void> {
    if (ids.length === 1) await this.col.deleteOne({ _id: ids[0]! });
    else if (ids.length > 1) await this.col.deleteMany({ _id: { $in: ids } });
  }

  async removeForEndpoint(endpointId: string): Promise<number> {
    return (await this.col.deleteMany({ endpoint_id: endpointId })).deletedCount;
  }
}
