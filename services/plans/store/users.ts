import { randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import type { Logger } from "@meter/lib/logger";
import { insertUnlessPresent, isDuplicateKeyError } from "@meter/lib/mongo";
import { keyPage, readThroughCache } from "./keyed-reads.ts";
import { UserCache } from "./user-cache.ts";
import { pushSubscription, withSeq, type StoredEntry, type SubscriptionEntry } from "./subscriptions.ts";

export type { SubscriptionEntry };

/**
 * One entry of a user's team membership history: from `effective_at` on, the user's usage
 * counts for this team (`team_id` null: for no team, the user left).
 */
export interface MembershipEntry {
  /** Also the id kept in the team's member list (MemberListStore) while this entry is the user's latest. */
  id: string;
  /** Service team id. */
  team_id: string | null;
  external_team_id: string | null;
  effective_at: Date;
}

/**
 * A user as stored, keyed by product and external id so that every hot lookup is an `_id`
 * equality (the only filter the embedded database answers from an index), with its whole
 * subscription history inside: one document read serves GetUser, the session and ingestion.
 */
interface StoredUser {
  /** userKey(product_id, external_user_id); one user per external id per product. */
  _id: string;
  /** Internal id (service_user_id). */
  id: string;
  product_id: string;
  external_user_id: string;
  name: string | null;
  /** Oldest first; appended with one atomic `$push`, so concurrent changes keep one order. */
  subscriptions: StoredEntry[];
  /** Team membership history, oldest first; absent on users stored before teams (never in one). */
  teams?: MembershipEntry[];
  created_at: Date;
  updated_at: Date;
}

export interface UserDoc {
  /** Internal id (service_user_id). */
  id: string;
  product_id: string;
  external_user_id: string;
  name: string | null;
  /** Oldest first. */
  subscriptions: SubscriptionEntry[];
  /** The latest entry of the history; null until one is set. */
  current: SubscriptionEntry | null;
  /** Oldest first; empty: never in a team. */
  memberships: MembershipEntry[];
  /** The latest membership when it names a team; null: in no team. */
  team: MembershipEntry | null;
  created_at: Date;
  updated_at: Date;
}

/** Product ids are UUIDs (no colon), so the key is unambiguous whatever the external id holds. */
export function userKey(productId: string, externalUserId: string): string {
  return `${productId}:${externalUserId}`;
}

export interface UserStoreOptions {
  logger: Logger;
  /** USER_CACHE_MB in bytes: users kept in memory (UserCache); 0 reads every user from the database. */
  cacheBytes?: number;
  /** The clock the cache names and polls changes by (tests skew it). */
  now?: () => number;
}

function fromStored(d: StoredUser): UserDoc {
  const subscriptions = withSeq(d.subscriptions);
  const memberships = d.teams ?? [];
  const latest = memberships.at(-1);
  return {
    id: d.id,
    product_id: d.product_id,
    external_user_id: d.external_user_id,
    name: d.name,
    subscriptions,
    current: subscriptions.at(-1) ?? null,
    memberships,
    team: latest?.team_id ? latest : null,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}

function newUser(productId: string, externalUserId: string, name: string | null): StoredUser {
  const now = new Date();
  return {
    _id: userKey(productId, externalUserId),
    id: randomUUID(),
    product_id: productId,
    external_user_id: externalUserId,
    name,
    subscriptions: [],
    created_at: now,
    updated_at: now,
  };
}

export class UserStore {
  private readonly users: Collection<StoredUser>;
  /** Changes are announced to the other replicas' caches whether or not this one caches. */
  readonly cache: UserCache;

  constructor(db: Db, opts: UserStoreOptions) {
    this.users = db.collection<StoredUser>("users");
    this.cache = new UserCache(db, opts.logger, opts.cacheBytes ?? 0, opts.now);
  }

  /** Inserts a user; null when the product already has that external_user_id. */
  async insert(productId: string, externalUserId: string, name: string | null): Promise<UserDoc | null> {
    const doc = newUser(productId, externalUserId, name);
    return (await insertUnlessPresent(this.users, doc)) ? fromStored(doc) : null;
  }

  /**
   * Inserts many new users of a product in one command (imports, benchmarks); ids the product
   * already has are skipped. Resolves the number inserted.
   */
  async insertMany(productId: string, users: readonly { externalUserId: string; name: string | null }[]): Promise<number> {
    if (users.length === 0) return 0;
    try {
      return (await this.users.insertMany(users.map((u) => newUser(productId, u.externalUserId, u.name)), { ordered: false })).insertedCount;
    } catch (err) {
      if (isDuplicateKeyError(err) && typeof (err as { insertedCount?: unknown }).insertedCount === "number") return (err as { insertedCount: number }).insertedCount;
      throw err;
    }
  }

  async get(productId: string, externalUserId: string): Promise<UserDoc | null> {
    return (await this.getMany(productId, [externalUserId]))[0] ?? null;
  }

  /**
   * The user as the database holds it now, past every cache: what a change decides from (a
   * replica's cache may still hold the user as it was before another replica's change).
   */
  async getCurrent(productId: string, externalUserId: string): Promise<UserDoc | null> {
    const doc = await this.users.findOne({ _id: userKey(productId, externalUserId) });
    return doc ? fromStored(doc) : null;
  }

  /**
   * The users that exist among `externalUserIds`, in the order asked: from the cache, and the
   * rest in one query by `_id` list (the embedded database narrows it by its `_id` index too).
   */
  async getMany(productId: string, externalUserIds: readonly string[]): Promise<UserDoc[]> {
    return readThroughCache(this.cache, this.users, [...new Set(externalUserIds)].map((id) => userKey(productId, id)), fromStored);
  }

  /**
   * Up to `limit` users of the product whose external id starts with `prefix`, after the
   * external id `after`, in external id order: one range read of `_id`s (product first), so a
   * page costs its own users whatever the product or the collection holds.
   */
  async page(productId: string, prefix: string, after: string | undefined, limit: number): Promise<UserDoc[]> {
    return (await keyPage(this.users, `${productId}:`, prefix, after, limit)).map(fromStored);
  }

  /** Every subscribed user of every product with its current subscription (one whole read, for PlanMemberStore.backfill). */
  async *currentSubscriptions(): AsyncGenerator<{ productId: string; externalUserId: string; planId: string; sub: string }> {
    for await (const u of this.users.find({}, { projection: { product_id: 1, external_user_id: 1, subscriptions: 1 } })) {
      const current = u.subscriptions?.at(-1);
      if (current) yield { productId: u.product_id, externalUserId: u.external_user_id, planId: current.plan_id, sub: current.id };
    }
  }

  /**
   * Appends a subscription to the user's history with one atomic `$push`: concurrent changes
   * are all kept, in the one order the database applied them. Returns the user after the
   * change and the position of the new entry (of the one in force when it was the same: nothing
   * appended); null when the user does not exist.
   */
  async appendSubscription(
    productId: string,
    externalUserId: string,
    entry: Omit<StoredEntry, "id"> & { id?: string },
  ): Promise<{ user: UserDoc; entry: SubscriptionEntry; appended: boolean } | null> {
    const id = entry.id ?? randomUUID();
    const pushed = await pushSubscription(this.users, this.cache, userKey(productId, externalUserId), { ...entry, id });
    if (!pushed) return null;
    const user = fromStored(pushed.doc);
    return { user, entry: pushed.appended ? user.subscriptions.find((s) => s.id === id)! : user.current!, appended: pushed.appended };
  }

  /**
   * Appends a membership to the user's team history with one atomic `$push` (as a subscription):
   * the user after the change and the entry before the new one (null for a first membership).
   * Null when the user does not exist.
   */
  async appendMembership(
    productId: string,
    externalUserId: string,
    entry: MembershipEntry,
  ): Promise<{ user: UserDoc; previous: MembershipEntry | null } | null> {
    const key = userKey(productId, externalUserId);
    const doc = await this.cache.change(key, () =>
      this.users.findOneAndUpdate(
        { _id: key },
        { $push: { teams: entry }, $max: { updated_at: entry.effective_at } },
        { returnDocument: "after" },
      ),
    );
    if (!doc) return null;
    const user = fromStored(doc);
    const at = user.memberships.findIndex((m) => m.id === entry.id);
    return { user, previous: user.memberships[at - 1] ?? null };
  }
}
