import type { Filter } from "mongodb";
import { DbStore, deleteInRounds, insertIgnoringDuplicates, insertUnlessPresent } from "@meter/lib/mongo";

export type DeliveryStatus = "pending" | "success" | "failed";
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ["pending", "success", "failed"];

export interface DeliveryDoc {
  /** "whdel_" + a UUID derived from (event id, endpoint id): one delivery per event and endpoint. */
  _id: string;
  product_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  /** Status of the last answer; 0 before the first attempt or when there was no answer. */
  status_code: number;
  /** Attempts made so far. */
  attempt: number;
  created_at: Date;
  completed_at: Date | null;
  next_attempt_at: Date | null;
  last_error: string | null;
}

export interface DeliveryPageKey {
  created_at: Date;
  id: string;
}

export class DeliveryStore extends DbStore {
  private readonly col = this.db.collection<DeliveryDoc>("deliveries");

  async init(): Promise<void> {
    await this.col.createIndex({ product_id: 1, endpoint_id: 1, created_at: -1, _id: -1 });
    await this.col.createIndex({ product_id: 1, endpoint_id: 1, status: 1, created_at: -1, _id: -1 });
    await this.col.createIndex({ created_at: 1 });
  }

  /** Deletes the ended deliveries created before `cutoff`; returns how many. */
  async deleteEndedBefore(cutoff: Date): Promise<number> {
    return deleteInRounds(this.col, { created_at: { $lt: cutoff }, status: { $ne: "pending" } });
  }

  /** Events of the deliveries created before `cutoff` that are still kept (pending ones). */
  async eventIdsBefore(cutoff: Date): Promise<string[]> {
    const rows = await this.col.find({ created_at: { $lt: cutoff } }, { projection: { event_id: 1 } }).toArray();
    return [...new Set(rows.map((r) => r.event_id))];
  }

  /** Inserts the delivery unless it exists (same id); returns the stored one. */
  async ensure(doc: DeliveryDoc): Promise<DeliveryDoc> {
    if (await insertUnlessPresent(this.col, doc)) return doc;
    return (await this.col.findOne({ _id: doc._id })) ?? doc;
  }

  /** Inserts the deliveries that do not exist yet (same id); the others are left as they are. */
  async ensureMany(docs: DeliveryDoc[]): Promise<void> {
    await insertIgnoringDuplicates(this.col, docs);
  }

  /** Every pending delivery's queue position (the start-up check that each one has an entry). */
  pending(): Promise<Pick<DeliveryDoc, "_id" | "product_id" | "endpoint_id" | "next_attempt_at">[]> {
    return this.col.find({ status: "pending" }, { projection: { _id: 1, product_id: 1, endpoint_id: 1, next_attempt_at: 1 } }).toArray();
  }

  get(id: string): Promise<DeliveryDoc | null> {
    return this.col.findOne({ _id: id });
  }

  /** Records the outcome of `attempt`, only while the delivery is pending at the attempt before. */
  async record(id: string, attempt: number, fields: Partial<DeliveryDoc>): Promise<boolean> {
    const res = await this.col.updateOne({ _id: id, status: "pending", attempt: attempt - 1 }, { $set: { ...fields, attempt } });
    return res.modifiedCount === 1;
  }

  /** Ends a pending delivery without a further attempt (e.g. its endpoint was disabled). */
  async abandon(id: string, reason: string, at: Date): Promise<void> {
    await this.col.updateOne(
      { _id: id, status: "pending" },
      { $set: { status: "failed", completed_at: at, next_attempt_at: null, last_error: reason } },
    );
  }

  /** Newest first; `after` is the last row of the previous page. Fetches one extra row to know if more exist. */
  page(productId: string, endpointId: string, opts: { status?: DeliveryStatus; after?: DeliveryPageKey; limit: number }) {
    const filter: Filter<DeliveryDoc> = { product_id: productId, endpoint_id: endpointId };
    if (opts.status) filter.status = opts.status;
    if (opts.after) {
      filter.$or = [
        { created_at: { $lt: opts.after.created_at } },
        { created_at: opts.after.created_at, _id: { $lt: opts.after.id } },
      ];
    }
    return this.col.find(filter).sort({ created_at: -1, _id: -1 }).limit(opts.limit + 1).toArray();
  }

  async remove(id: string): Promise<void> {
    await this.col.deleteOne({ _id: id });
  }

  async deleteForEndpoint(productId: string, endpointId: string): Promise<number> {
    return deleteInRounds(this.col, { product_id: productId, endpoint_id: endpointId });
  }
}
