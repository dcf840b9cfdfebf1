import { DbStore, deleteInRounds } from "@meter/lib/mongo";

export interface PortalTokenDoc {
  /** SHA-256 of the token: authentication is an equality match on the primary key. */
  _id: string;
  product_id: string;
  /** The product's external user id: the one user the token reads. */
  user_id: string;
  created_at: Date;
  expires_at: Date;
}

/**
 * Portal tokens, one document per token. Authentication refuses an expired one by its
 * `expires_at`; `deleteExpired` removes them (the embedded database has no TTL indexes).
 */
export class PortalTokenStore extends DbStore {
  private readonly tokens = this.db.collection<PortalTokenDoc>("portal_tokens");

  async init(): Promise<void> {
    await this.tokens.createIndex({ product_id: 1, user_id: 1 });
    await this.tokens.createIndex({ expires_at: 1 });
  }

  async insert(doc: PortalTokenDoc): Promise<void> {
    await this.tokens.insertOne(doc);
  }

  async byHash(hash: string): Promise<PortalTokenDoc | null> {
    return this.tokens.findOne({ _id: hash });
  }

  /** In rounds (lib/mongo.ts deleteInRounds): one delete of a backlog past the embedded database's bound failed every time. */
  async deleteExpired(now: Date): Promise<number> {
    return deleteInRounds(this.tokens, { expires_at: { $lte: now } });
  }

  /** Deletes every token of the user; how many there were. */
  async deleteUser(productId: string, userId: string): Promise<number> {
    return deleteInRounds(this.tokens, { product_id: productId, user_id: userId });
  }
}
