import type { AnyBulkWriteOperation } from "mongodb";
import { LRUCache } from "lru-cache";
import { DbStore, upsertRetrying } from "@meter/lib/mongo";

/**
 * The users whose late changes are followed (`late_changes`), and what this process knows of
 * them; follow.ts says when a change is applied.
 */

/** Users whose applied change this process remembers. */
const REMEMBERED = 100_000;

/**
 * A user with a change recorded within the window: `_id` "<product>|<user>"; or a team whose
 * own change a read about the team applied: `_id` "team|<product>|<external team id>" (a product
 * id is a UUID, so no user's entry begins so, whatever the user id), `team_id` its external id
 * and `user_id` "".
 */
export interface PendingChange {
  _id: string;
  product_id: string;
  user_id: string;
  team_id?: string;
  /** When the last change seen leaves the window: followed until then. */
  until: Date;
}

/** What this process knows of each user's changes: the change seen last, and whether it applied it. */
interface Seen {
  changes: string;
  applied: boolean;
}

export class LateChanges extends DbStore {
  readonly pending = this.db.collection<PendingChange>("late_changes");
  readonly seen = new LRUCache<string, Seen>({ max: REMEMBERED });
  /** Applications under way in this process, so concurrent reads share one. */
  readonly running = new Map<string, Promise<boolean>>();
  /**
   * When this process's follower last applied each followed user's changes (start of that
   * round): the next round needs only the lists recorded since. Not stored: a replica or a
   * restart that does not know it looks at every list within the window, which is the same
   * answer read from more lists.
   */
  readonly checked = new LRUCache<string, number>({ max: REMEMBERED });
  /** Where the follower's walk through `late_changes` (by `_id`) goes on; "" starts over. */
  cursor = "";
  /**
   * Moves this process has made (by any request or the follower), counted before they are noted
   * as applied: a read begun before the count changed may hold documents from before a move.
   */
  moves = 0;

  /** Records users to follow (idempotent; a later change extends the follow). */
  async follow(productId: string, users: readonly { userId: string; until: Date }[]): Promise<void> {
    if (users.length === 0) return;
    const ops: AnyBulkWriteOperation<PendingChange>[] = users.map((u) => ({
      updateOne: {
        filter: { _id: pendingId(productId, u.userId) },
        // A new change: the next round looks at every list within the window again.
        update: { $set: { product_id: productId, user_id: u.userId, until: u.until } },
        upsert: true,
      },
    }));
    await upsertRetrying(() => this.pending.bulkWrite(ops, { ordered: false }));
  }

  /** Records a team to follow, whose own change a read about the team applied (idempotent, as follow). */
  async followTeam(productId: string, externalTeamId: string, until: Date): Promise<void> {
    await upsertRetrying(() =>
      this.pending.updateOne({ _id: `team|${productId}|${externalTeamId}` }, { $set: { product_id: productId, user_id: "", team_id: externalTeamId, until } }, { upsert: true }),
    );
  }
}

const pendingId = (productId: string, userId: string) => `${productId}|${userId}`;
