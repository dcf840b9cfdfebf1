import type { Collection, Document } from "mongodb";
import type { UserCache } from "./user-cache.ts";

/**
 * A subscription history, as users and teams keep it inside their own document: one
 * subscription per entry, oldest first, appended with one atomic `$push`.
 */

/** One subscription: which plan, for which billing window, set when. */
export interface SubscriptionEntry {
  id: string;
  /** Position in the history, 1 for the first subscription. */
  seq: number;
  plan_id: string;
  /** The plan's name when the subscription was set. */
  plan_name: string;
  billing_subscription_id: string | null;
  period_start: Date | null;
  period_end: Date | null;
  effective_at: Date;
}

/** A history entry as stored: its position is its place in the array. */
export type StoredEntry = Omit<SubscriptionEntry, "seq">;

/** The stored history with each entry's position. */
export function withSeq(entries: readonly StoredEntry[] | undefined): SubscriptionEntry[] {
  return (entries ?? []).map((s, i) => ({ ...s, seq: i + 1 }));
}

/**
 * Appends `entry` to the `subscriptions` of the document `_id` with one atomic `$push`, through
 * the cache so that every replica lets go of the document: concurrent changes are all kept, in
 * the one order the database applied them. The document after the change; null when it does
 * not exist.
 */
export async function pushSubscription<D extends Document & { _id: string }>(
  collection: Collection<D>,
  cache: UserCache,
  key: string,
  entry: StoredEntry,
): Promise<D | null> {
  const update = { $push: { subscriptions: entry }, $max: { updated_at: entry.effective_at } } as unknown as Parameters<Collection<D>["findOneAndUpdate"]>[1];
  return (await cache.change(key, () =>
    collection.findOneAndUpdate({ _id: key } as Parameters<Collection<D>["findOneAndUpdate"]>[0], update, { returnDocument: "after" }),
  )) as D | null;
}
