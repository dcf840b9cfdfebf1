import { randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import { rpcError } from "@meter/lib/errors";
import { isDuplicateKeyError } from "@meter/lib/mongo";
import type { SubscriptionEntry } from "./users.ts";

/** One row of a user's subscription history; `_id` is the subscription id. */
export interface SubscriptionDoc extends Omit<SubscriptionEntry, "id"> {
  _id: string;
  product_id: string;
  /** Internal user id. */
  user_id: string;
}

const MAX_APPEND_ATTEMPTS = 50;

export class SubscriptionStore {
  private readonly subs: Collection<SubscriptionDoc>;

  constructor(db: Db) {
    this.subs = db.collection<SubscriptionDoc>("subscriptions");
  }

  async init(): Promise<void> {
    // One row per history position.
    await this.subs.createIndex({ user_id: 1, seq: 1 }, { unique: true });
    await this.subs.createIndex({ product_id: 1, user_id: 1, seq: 1 });
  }

  /**
   * Appends a subscription at the next position of the user's history. The unique index on
   * (user_id, seq) orders concurrent changes: a writer that loses a position takes the next.
   */
  async append(productId: string, userId: string, sub: Omit<SubscriptionEntry, "id" | "seq">): Promise<SubscriptionEntry> {
    for (let attempt = 0; attempt < MAX_APPEND_ATTEMPTS; attempt++) {
      const last = await this.latest(userId);
      const entry: SubscriptionEntry = { id: randomUUID(), seq: (last?.seq ?? 0) + 1, ...sub };
      const { id, ...rest } = entry;
      try {
        await this.subs.insertOne({ _id: id, product_id: productId, user_id: userId, ...rest });
        return entry;
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
      }
    }
    throw rpcError.unavailable("the user's subscription is being changed concurrently; retry");
  }

  /** The latest subscription of a user, or null. */
  async latest(userId: string): Promise<SubscriptionEntry | null> {
    const doc = await this.subs.find({ user_id: userId }).sort({ seq: -1 }).limit(1).next();
    if (!doc) return null;
    const { _id, product_id: _p, user_id: _u, ...rest } = doc;
    return { id: _id, ...rest };
  }

  /** The history of each user, oldest first, by internal user id. */
  async historyOf(productId: string, userIds: readonly string[]): Promise<Map<string, SubscriptionEntry[]>> {
    const out = new Map<string, SubscriptionEntry[]>(userIds.map((id) => [id, []]));
    if (userIds.length === 0) return out;
    const docs = await this.subs
      .find({ product_id: productId, user_id: { $in: [...userIds] } })
      .sort({ user_id: 1, seq: 1 })
      .toArray();
    for (const { _id, product_id: _p, user_id, ...rest } of docs) {
      out.get(user_id)?.push({ id: _id, ...rest });
    }
    return out;
  }
}
