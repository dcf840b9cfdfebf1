import { randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import { isDuplicateKeyError } from "@meter/lib/mongo";

/** One subscription of a user: which plan, for which billing window, set when. */
export interface SubscriptionEntry {
  /** Also the _id of its row in the subscription history. */
  id: string;
  /** Position in the user's history, 1 for the first subscription. */
  seq: number;
  plan_id: string;
  /** The plan's name when the subscription was set. */
  plan_name: string;
  billing_subscription_id: string | null;
  period_start: Date | null;
  period_end: Date | null;
  effective_at: Date;
}

export interface UserDoc {
  _id: string;
  product_id: string;
  external_user_id: string;
  name: string | null;
  /** Copy of the latest entry of the subscription history; null until one is set. */
  current: SubscriptionEntry | null;
  created_at: Date;
  updated_at: Date;
}

export class UserStore {
  private readonly users: Collection<UserDoc>;

  constructor(db: Db) {
    this.users = db.collection<UserDoc>("users");
  }

  async init(): Promise<void> {
    // external_user_id is unique within a product: concurrent sign-ups yield one user.
    await this.users.createIndex({ product_id: 1, external_user_id: 1 }, { unique: true });
    await this.users.createIndex({ product_id: 1, "current.plan_id": 1 });
  }

  /** Inserts a user; null when the product already has that external_user_id. */
  async insert(productId: string, externalUserId: string, name: string | null): Promise<UserDoc | null> {
    const now = new Date();
    const doc: UserDoc = {
      _id: randomUUID(),
      product_id: productId,
      external_user_id: externalUserId,
      name,
      current: null,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.users.insertOne(doc);
      return doc;
    } catch (err) {
      if (isDuplicateKeyError(err)) return null;
      throw err;
    }
  }

  async get(productId: string, externalUserId: string): Promise<UserDoc | null> {
    return this.users.findOne({ product_id: productId, external_user_id: externalUserId });
  }

  async getMany(productId: string, externalUserIds: readonly string[]): Promise<UserDoc[]> {
    if (externalUserIds.length === 0) return [];
    return this.users.find({ product_id: productId, external_user_id: { $in: [...new Set(externalUserIds)] } }).toArray();
  }

  /**
   * Caches `entry` as the user's current subscription unless a later one is cached already.
   * The history is the source of truth; this copy serves reads and subscriber counts.
   */
  async cacheCurrent(userId: string, entry: SubscriptionEntry): Promise<void> {
    await this.users.updateOne(
      { _id: userId, $or: [{ current: null }, { "current.seq": { $lt: entry.seq } }] },
      { $set: { current: entry, updated_at: entry.effective_at } },
    );
  }

  async byId(userId: string): Promise<UserDoc | null> {
    return this.users.findOne({ _id: userId });
  }

  /** Subscriber count per plan id, by current subscription. */
  async countByPlan(productId: string): Promise<Map<string, number>> {
    const rows = await this.users
      .aggregate<{ _id: string; n: number }>([
        { $match: { product_id: productId, current: { $ne: null } } },
        { $group: { _id: "$current.plan_id", n: { $sum: 1 } } },
      ])
      .toArray();
    return new Map(rows.map((r) => [r._id, r.n]));
  }
}
