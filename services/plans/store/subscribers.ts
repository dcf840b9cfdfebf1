import type { Collection, Db } from "mongodb";
import { findByIds } from "@meter/lib/mongo";

/** Subscribers of one plan: users whose latest subscription names it. */
interface PlanSubscribersDoc {
  /** `<product id>:<plan id>`. */
  _id: string;
  n: number;
}

/**
 * Subscriber counts kept per plan (`plan_subscribers`), and member counts per team
 * (`team_member_counts`, by service team id), moved with every subscription or membership
 * change (`$inc`, atomic per document), so that counting costs one `_id` read per plan or team
 * however many users there are.
 */
export class SubscriberStore {
  private readonly counts: Collection<PlanSubscribersDoc>;

  constructor(db: Db, collection: "plan_subscribers" | "team_member_counts" = "plan_subscribers") {
    this.counts = db.collection<PlanSubscribersDoc>(collection);
  }

  /**
   * Moves one user from `from` (its previous plan or team, null for none) to `to` (null: none).
   * Each change knows its predecessor from the order of the history, so concurrent changes
   * of one user move the counts consistently.
   */
  async move(productId: string, from: string | null, to: string | null): Promise<void> {
    if (from === to) return;
    if (to !== null) await this.counts.updateOne({ _id: `${productId}:${to}` }, { $inc: { n: 1 } }, { upsert: true });
    if (from !== null) await this.counts.updateOne({ _id: `${productId}:${from}` }, { $inc: { n: -1 } }, { upsert: true });
  }

  async countsOf(productId: string, planIds: readonly string[]): Promise<Map<string, number>> {
    const docs = await findByIds(this.counts, planIds.map((id) => `${productId}:${id}`));
    const n = new Map(docs.map((d) => [d._id, d.n]));
    return new Map(planIds.map((id) => [id, n.get(`${productId}:${id}`) ?? 0]));
  }
}
