import type { Collection, Db } from "mongodb";
import { pageRange } from "./key-range.ts";

/**
 * The users of each plan (`plan_members`), and of each team (`team_members`, keyed by the
 * service team id and membership entry ids, kept by SetUserTeam the same way), for listing a
 * plan's users without reading every user: one small
 * document per user and plan its current subscription is on, keyed
 * `<product id>:<plan id>:<external_user_id>` (both ids are UUIDs, so the key is unambiguous),
 * so a page is one `_id` range read, as the users listing is.
 *
 * The user document (its last subscription) stays the truth; this is an index of it kept by
 * SetSubscription. A document holds the ids of the user's subscriptions to the plan that no
 * later subscription has replaced yet: a subscription adds its id before it is appended to the
 * history, and once appended takes the id of the one before it (its predecessor in the
 * history) off that one's plan, deleting the document when no id is left. The current
 * subscription has no successor, so its id stays: a user is listed under its current plan at
 * every moment, whatever order concurrent changes' writes land in (the history's order decides
 * who removes what, and each id is removed once). An id left behind (a crash between the
 * writes) lists a user under a plan it has left: listings read the users and drop those.
 */
interface MemberDoc {
  _id: string;
  subs: string[];
}

/** The document that says a collection was filled from what was stored before it was kept (one-time backfills). */
export const BACKFILL_MARK = "!backfilled";

export class PlanMemberStore {
  private readonly members: Collection<MemberDoc>;

  constructor(db: Db, collection: "plan_members" | "team_members" = "plan_members") {
    this.members = db.collection<MemberDoc>(collection);
  }

  private static key(productId: string, planId: string, externalUserId: string): string {
    return `${productId}:${planId}:${externalUserId}`;
  }

  /** Lists the user under the plan for the subscription `sub` (before that subscription is stored). */
  async add(productId: string, planId: string, externalUserId: string, sub: string): Promise<void> {
    await this.members.updateOne({ _id: PlanMemberStore.key(productId, planId, externalUserId) }, { $addToSet: { subs: sub } }, { upsert: true });
  }

  /** Takes the replaced subscription `sub` off its plan; the user leaves the plan's list when no subscription to it is left. */
  async remove(productId: string, planId: string, externalUserId: string, sub: string): Promise<void> {
    const _id = PlanMemberStore.key(productId, planId, externalUserId);
    await this.members.updateOne({ _id }, { $pull: { subs: sub } });
    // Conditional: an id added meanwhile keeps the document (and one added after recreates it).
    await this.members.deleteOne({ _id, subs: { $size: 0 } });
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
   * on a database without the mark. A subscription replaced meanwhile may be added back: a
   * stale id, which listings drop.
   */
  async backfill(users: AsyncIterable<{ productId: string; externalUserId: string; planId: string; sub: string }>): Promise<number> {
    if (await this.members.findOne({ _id: BACKFILL_MARK })) return 0;
    let batch: { updateOne: { filter: { _id: string }; update: { $addToSet: { subs: string } }; upsert: true } }[] = [];
    let count = 0;
    const flush = async () => {
      if (batch.length > 0) await this.members.bulkWrite(batch, { ordered: false });
      count += batch.length;
      batch = [];
    };
    for await (const u of users) {
      batch.push({
        updateOne: { filter: { _id: PlanMemberStore.key(u.productId, u.planId, u.externalUserId) }, update: { $addToSet: { subs: u.sub } }, upsert: true },
      });
      if (batch.length >= 1_000) await flush();
    }
    await flush();
    await this.members.updateOne({ _id: BACKFILL_MARK }, { $set: { subs: [] } }, { upsert: true });
    return count;
  }
}
