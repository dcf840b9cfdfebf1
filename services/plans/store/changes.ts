import { DbStore } from "@meter/lib/mongo";

/**
 * The product's change marker and the latest changes behind it, so that running client
 * libraries reload only the users a plan update or a subscription change concerns, with one
 * small read per poll. One document per product: `marker` grows by one per change, and
 * `entries` holds the last changes in order, entry i standing for marker
 * `marker - entries.length + 1 + i`. Appending is one atomic `$inc` + `$push` (no retry under
 * concurrent changes); trimming is a separate write made only when nothing was appended in
 * between, so the rule above always holds.
 */
interface ChangeDoc {
  _id: string;
  marker: number;
  /**
   * A plan updated (`p`: its id), a user's subscription or team set (`u`: its external id), or a
   * team's subscription set (`t`: its external id).
   */
  entries: { p?: string; u?: string; t?: string }[];
}

/** Changes kept per product: a client more than this far behind reloads everything it holds. */
export const CHANGES_KEPT = 200;
/** Users (and teams) listed in one answer at most; past it the answer says "all" (a bulk change). */
export const CHANGED_USERS_MAX = 1_000;

export interface Changes {
  marker: number;
  all: boolean;
  planIds: string[];
  externalUserIds: string[];
  externalTeamIds: string[];
}

export type Change = { planId: string } | { externalUserId: string } | { externalTeamId: string };

export class ChangeStore extends DbStore {
  private readonly changes = this.db.collection<ChangeDoc>("changes");

  /** Records one change; returns the product's new marker. */
  async record(productId: string, change: Change): Promise<number> {
    const entry = "planId" in change ? { p: change.planId } : "externalUserId" in change ? { u: change.externalUserId } : { t: change.externalTeamId };
    const doc = await this.changes.findOneAndUpdate(
      { _id: productId },
      { $inc: { marker: 1 }, $push: { entries: entry } },
      { upsert: true, returnDocument: "after" },
    );
    const marker = doc!.marker;
    if (doc!.entries.length > 2 * CHANGES_KEPT) {
      // Conditional on the marker read: a change appended meanwhile makes this a no-op (the next one trims).
      await this.changes.updateOne({ _id: productId, marker }, { $set: { entries: doc!.entries.slice(-CHANGES_KEPT) } });
    }
    return marker;
  }

  /** The current marker and, after `since`, the plans, users and teams changed (or `all`). */
  async list(productId: string, since: number | undefined): Promise<Changes> {
    const none = (marker: number, all: boolean): Changes => ({ marker, all, planIds: [], externalUserIds: [], externalTeamIds: [] });
    // The marker alone first: most polls find nothing new and read a few bytes.
    const head = await this.changes.findOne({ _id: productId }, { projection: { marker: 1 } });
    const current = head?.marker ?? 0;
    if (since === undefined || since === current) return none(current, false);
    // A marker from the future: the database was replaced; whatever the caller holds may be stale.
    if (since > current) return none(current, true);
    const doc = await this.changes.findOne({ _id: productId });
    if (!doc) return none(0, true);
    const first = doc.marker - doc.entries.length + 1;
    if (since + 1 < first) return none(doc.marker, true);
    const plans = new Set<string>();
    const users = new Set<string>();
    const teams = new Set<string>();
    for (const e of doc.entries.slice(since + 1 - first)) {
      if (e.p !== undefined) plans.add(e.p);
      if (e.u !== undefined) users.add(e.u);
      if (e.t !== undefined) teams.add(e.t);
    }
    if (users.size > CHANGED_USERS_MAX || teams.size > CHANGED_USERS_MAX) return none(doc.marker, true);
    return { marker: doc.marker, all: false, planIds: [...plans], externalUserIds: [...users], externalTeamIds: [...teams] };
  }
}
