import type { Collection, Db } from "mongodb";
import { pageRange } from "./key-range.ts";

/**
 * The users of each plan, for listing a plan's users without reading every user: one small
 * document per user and plan its current subscription is on, keyed
 * `<product id>:<plan id>:<external_user_id>` (both ids are UUIDs, so the key is unambiguous),
 * so a page is one `_id` range read, as the users listing is.
 *
 * The user document (its last subscription) stays the truth; this is an index of it kept by
 * SetSubscription: the new plan's entry is written before the subscription is appended, the
 * previous plan's entry removed after. So every user is listed under its current plan at
 * every moment, and an entry left behind (a crash between the writes, a concurrent change)
 * names a plan the user has left: listings read the users and drop those.
 */
interface MemberDoc {
  _id: string;
  /** The subscription that put the user on the plan: a later removal names it, so that a newer entry survives an older removal. */
  sub: string;
}

const BACKFILL_MARK = "!backfilled";

export class PlanMemberStore {
  private readonly members: Collection<MemberDoc>;

  constructor(db: Db) {
    this.members = db.collection<MemberDoc>("plan_members");
  }

  private static key(productId: string, planId: string, externalUserId: string): string {
    return `${productId}:${planId}:${externalUserId}`;
  }

  /** Lists the user under the plan, for the subscription `sub` (before that subscription is stored). */
  async add(productId: string, planId: string, externalUserId: string, sub: string): Promise<void> {
    await this.members.updateOne({ _id: PlanMemberStore.key(productId, planId, externalUserId) }, { $set: { sub } }, { upsert: true });
  }

  /** Removes the entry the subscription `sub` wrote, unless a later subscription to the plan replaced it. */
  async remove(productId: string, planId: string, externalUserId: string, sub: string): Promise<void> {
    await this.members.deleteOne({ _id: PlanMemberStore.key(productId, planId, externalUserId), sub });
  }

  /** External ids listed under the plan that start with `prefix`, after `after`, in order; at most `limit`. */
  async page(productId: string, planId: string, prefix: string, after: string | undefined, limit: number): Promise<string[]> {
    const base = `${productId}:${planId}:`;
    const docs = await this.members
      .find({ _id: pageRange(base, prefix, after) }, { projection: { _id: 1 } })
      .sort({ _id: 1 })
      .limit(limit)
      .toArray();
    return docs.map((d) => d._id.slice(base.length));
  }

  /**
   * Lists every subscribed user under its current plan once, for users subscribed before this
   * listing existed: one read of the whole users collection, the first time a process starts
   * on a database without the mark. Entries are only inserted, never changed: one written
   * by SetSubscription meanwhile is newer.
   */
  async backfill(users: AsyncIterable<{ productId: string; externalUserId: string; planId: string; sub: string }>): Promise<number> {
    if (await this.members.findOne({ _id: BACKFILL_MARK })) return 0;
    let batch: { updateOne: { filter: { _id: string }; update: { $setOnInsert: { sub: string } }; upsert: true } }[] = [];
    let count = 0;
    const flush = async () => {
      if (batch.length > 0) await this.members.bulkWrite(batch, { ordered: false });
      count += batch.length;
      batch = [];
    };
    for await (const u of users) {
      batch.push({
        updateOne: { filter: { _id: PlanMemberStore.key(u.productId, u.planId, u.externalUserId) }, update: { $setOnInsert: { sub: u.sub } }, upsert: true },
      });
      if (batch.length >= 1_000) await flush();
    }
    await flush();
    await this.members.updateOne({ _id: BACKFILL_MARK }, { $set: { sub: "" } }, { upsert: true });
    return count;
  }
}
