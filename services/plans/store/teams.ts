import { randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import { insertUnlessPresent } from "@meter/lib/mongo";
import { keyPage, readThroughCache } from "./keyed-reads.ts";
import { pushSubscription, withSeq, type StoredEntry, type SubscriptionEntry } from "./subscriptions.ts";
import type { UserCache } from "./user-cache.ts";

/**
 * A team as stored (BUDGETS.md §4), keyed like a user by product and external id, so that
 * every lookup is an `_id` equality and a listing an `_id` range, with its subscription
 * history inside, kept as a user's is.
 */
interface StoredTeam {
  /** teamKey(product_id, external_team_id); one team per external id per product. */
  _id: string;
  /** Internal id (service_team_id), a UUID. */
  id: string;
  product_id: string;
  external_team_id: string;
  name: string;
  subscriptions: StoredEntry[];
  created_at: Date;
  updated_at: Date;
}

export interface TeamDoc {
  id: string;
  product_id: string;
  external_team_id: string;
  name: string;
  /** Oldest first. */
  subscriptions: SubscriptionEntry[];
  /** The latest entry of the history; null until one is set. */
  current: SubscriptionEntry | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * Teams share the user cache with users (one ring of changes, one poll): `t:` keeps their
 * keys apart from users' (which start with a product id, a UUID).
 */
export function teamKey(productId: string, externalTeamId: string): string {
  return `t:${productId}:${externalTeamId}`;
}

function fromStored(d: StoredTeam): TeamDoc {
  const subscriptions = withSeq(d.subscriptions);
  return {
    id: d.id,
    product_id: d.product_id,
    external_team_id: d.external_team_id,
    name: d.name,
    subscriptions,
    current: subscriptions.at(-1) ?? null,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}

export class TeamStore {
  private readonly teams: Collection<StoredTeam>;

  /** `cache`: the users' cache (UserStore.cache), which holds teams too. */
  constructor(
    db: Db,
    private readonly cache: UserCache,
  ) {
    this.teams = db.collection<StoredTeam>("teams");
  }

  /** Inserts a team; null when the product already has that external_team_id. */
  async insert(productId: string, externalTeamId: string, name: string): Promise<TeamDoc | null> {
    const now = new Date();
    const doc: StoredTeam = {
      _id: teamKey(productId, externalTeamId),
      id: randomUUID(),
      product_id: productId,
      external_team_id: externalTeamId,
      name,
      subscriptions: [],
      created_at: now,
      updated_at: now,
    };
    return (await insertUnlessPresent(this.teams, doc)) ? fromStored(doc) : null;
  }

  async get(productId: string, externalTeamId: string): Promise<TeamDoc | null> {
    return (await this.getMany(productId, [externalTeamId]))[0] ?? null;
  }

  /** The teams that exist among `externalTeamIds`, in the order asked: from the cache, the rest in one query by `_id` list. */
  async getMany(productId: string, externalTeamIds: readonly string[]): Promise<TeamDoc[]> {
    return readThroughCache(this.cache, this.teams, [...new Set(externalTeamIds)].map((id) => teamKey(productId, id)), fromStored);
  }

  /** Up to `limit` teams whose external id starts with `prefix`, after `after`, in external id order: one `_id` range read. */
  async page(productId: string, prefix: string, after: string | undefined, limit: number): Promise<TeamDoc[]> {
    return (await keyPage(this.teams, teamKey(productId, ""), prefix, after, limit)).map(fromStored);
  }

  /** Every subscribed team of every product with its current plan (one whole read, for SubscriberStore.backfill). */
  async *currentSubscriptions(): AsyncGenerator<{ productId: string; planId: string }> {
    for await (const t of this.teams.find({}, { projection: { product_id: 1, subscriptions: 1 } })) {
      const current = t.subscriptions?.at(-1);
      if (current) yield { productId: t.product_id, planId: current.plan_id };
    }
  }

  /** Appends a subscription to the team's history, as UserStore.appendSubscription does to a user's. */
  async appendSubscription(productId: string, externalTeamId: string, entry: StoredEntry): Promise<{ team: TeamDoc; entry: SubscriptionEntry; appended: boolean } | null> {
    const pushed = await pushSubscription(this.teams, this.cache, teamKey(productId, externalTeamId), entry);
    if (!pushed) return null;
    const team = fromStored(pushed.doc);
    return { team, entry: pushed.appended ? team.subscriptions.find((s) => s.id === entry.id)! : team.current!, appended: pushed.appended };
  }
}
