import type { Collection, Db } from "mongodb";
import { findByIds } from "@meter/lib/mongo";
import { BACKFILL_MARK } from "./plan-members.ts";

/** Subscribers of one plan: users (or teams) whose latest subscription names it. */
interface PlanSubscribersDoc {
  /** `<product id>:<plan id>`. */
  _id: string;
  n: number;
}

/**
 * Subscriber counts kept per plan (`plan_subscribers` for users, `plan_team_subscribers` for
 * teams), and member counts per team (`team_member_counts`, by service team id), moved with
 * every subscription or membership
 * change (`$inc`, atomic per document), so that counting costs one `_id` read per plan or team
 * however many users there are.
 */
export class SubscriberStore {
  private readonly counts: Collection<PlanSubscribersDoc>;

  constructor(db: Db, collection: "plan_subscribers" | "plan_team_subscribers" | "team_member_counts" = "plan_subscribers") {
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
    // Never below 0: a move off a plan counted by no move onto it (a change served by a release that
    // kept no such count) would otherwise read as a negative number of subscribers.
    const n = new Map(docs.map((d) => [d._id, Math.max(0, d.n)]));
    return new Map(planIds.map((id) => [id, n.get(`${productId}:${id}`) ?? 0]));
  }

  /**
   * Sets every count from the current subscriptions `current` yields, once: the first time a
   * process starts on a database without the mark (counts kept since a release that did not
   * keep them). Returns how many subscriptions it counted (0 when the mark was there).
   */
  async backfill(current: AsyncIterable<{ productId: string; planId: string }>): Promise<number> {
    if (await this.counts.findOne({ _id: BACKFILL_MARK })) return 0;
    const n = new Map<string, number>();
    let count = 0;
    for await (const c of current) {
      const id = `${c.productId}:${c.planId}`;
      n.set(id, (n.get(id) ?? 0) + 1);
      count++;
    }
    // Whole values, not increments: two processes starting together write the same counts.
    const ops = [...n].map(([id, value]) => ({ updateOne: { filter: { _id: id }, update: { $set: { n: value } }, upsert: true } }));
    for (let i = 0; i < ops.length; i += 1_000) await this.counts.bulkWrite(ops.slice(i, i + 1_000), { ordered: false });
    await this.counts.updateOne({ _id: BACKFILL_MARK }, { $set: { n: 0 } }, { upsert: true });
    return count;
  }
}
