import type { Collection, Db } from "mongodb";
import { findByIds } from "@meter/lib/mongo";

/** Subscribers of one plan: users whose latest subscription names it. */
interface PlanSubscribersDoc {
  /** `<product id>:<plan id>`. */
  _id: string;
  n: number;
}

/**
 * Subscriber counts kept per plan and moved with every subscription change (`$inc`, atomic
 * per document), so that counting costs one `_id` read per plan however many users there are.
 */
export class SubscriberStore {
  private readonly counts: Collection<PlanSubscribersDoc>;

  constructor(db: Db) {
    this.counts = db.collection<PlanSubscribersDoc>("plan_subscribers");
  }

  /**
   * Moves one user from `from` (its previous plan, null for a first subscription) to `to`.
   * Each change knows its predecessor from the order of the history, so concurrent changes
   * of one user move the counts consistently.
   */
  async move(productId: string, from: string | null, to: string): Promise<void> {
    if (from === to) return;
    await this.counts.updateOne({ _id: `${productId}:${to}` }, { $inc: { n: 1 } }, { upsert: true });
    if (from !== null) await this.counts.updateOne({ _id: `${productId}:${from}` }, { $inc: { n: -1 } }, { upsert: true });
  }

  async countsOf(productId: string, planIds: readonly string[]): Promise<Map<string, number>> {
    const docs = await findByIds(this.counts, planIds.map((id) => `${productId}:${id}`));
    const n = new Map(docs.map((d) => [d._id, d.n]));
    return new Map(planIds.map((id) => [id, n.get(`${productId}:${id}`) ?? 0]));
  }
}
