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

/** What makes two subscriptions the same: plan, billing window and billing id (not when they were set). */
export function subscriptionKey(e: Pick<StoredEntry, "plan_id" | "period_start" | "period_end" | "billing_subscription_id">): string {
  return JSON.stringify([e.plan_id, e.period_start?.getTime() ?? null, e.period_end?.getTime() ?? null, e.billing_subscription_id]);
}

/**
 * Appends `entry` to the `subscriptions` of the document `_id` with one atomic `$push`, through
 * the cache so that every replica lets go of the document: concurrent changes are all kept, in
 * the one order the database applied them. Unless it is the subscription in force already (its
 * `subscriptionKey` is the document's `current_subscription`): a product that sets the same
 * subscription at every sign-in would otherwise grow the history, and every read and change of
 * it, without bound; then nothing is written (`appended` false). The document after; null when
 * it does not exist.
 */
export async function pushSubscription<D extends Document & { _id: string }>(
  collection: Collection<D>,
  cache: UserCache,
  key: string,
  entry: StoredEntry,
): Promise<{ doc: D; appended: boolean } | null> {
  const same = subscriptionKey(entry);
  const filter = { _id: key, current_subscription: { $ne: same } } as unknown as Parameters<Collection<D>["findOneAndUpdate"]>[0];
  const update = { $push: { subscriptions: entry }, $set: { current_subscription: same }, $max: { updated_at: entry.effective_at } } as unknown as Parameters<Collection<D>["findOneAndUpdate"]>[1];
  const doc = (await cache.change(key, () => collection.findOneAndUpdate(filter, update, { returnDocument: "after" }))) as D | null;
  if (doc) return { doc, appended: true };
  // Not there, or the same subscription in force: read from the database, not a replica's cache.
  const current = (await collection.findOne({ _id: key } as Parameters<Collection<D>["findOne"]>[0])) as D | null;
  return current ? { doc: current, appended: false } : null;
}
