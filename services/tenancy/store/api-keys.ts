import { randomUUID } from "node:crypto";
import { DbStore } from "@meter/lib/mongo";

export type KeyScope = "admin" | "ingest";

export interface ApiKeyDoc {
  /** SHA-256 of the key: lookups are an equality match on the primary key. */
  _id: string;
  product_id: string;
  /** The id the API shows (`/keys/{id}`). */
  key_id: string;
  name: string;
  scope: KeyScope;
  /** First characters of the key, to tell keys apart without revealing them. */
  display_prefix: string;
  created_at: Date;
  expires_at: Date | null;
  /** Moved forward at most every LAST_USED_STEP_MS, so a busy key costs no write per request. */
  last_used_at: Date | null;
}

/** How stale `last_used_at` may get before an authentication moves it forward. */
export const LAST_USED_STEP_MS = 30_000;

/** Name and scope of the key every product had before keys could be named. */
const LEGACY = { name: "default", scope: "admin" as KeyScope };

export class ApiKeyStore extends DbStore {
  private readonly keys = this.db.collection<ApiKeyDoc>("api_keys");

  async init(): Promise<void> {
    await this.keys.createIndex({ product_id: 1 });
    await this.nameLegacyKeys();
  }

  /**
   * Keys stored before keys had ids, names and scopes become the product's admin key named
   * "default", as a new product's first key is. Each document is claimed by a conditional
   * write, so replicas starting together give it one id.
   */
  private async nameLegacyKeys(): Promise<void> {
    const legacy = await this.keys.find({ key_id: { $exists: false } }, { projection: { _id: 1 } }).toArray();
    for (const { _id } of legacy) {
      await this.keys.updateOne(
        { _id, key_id: { $exists: false } },
        { $set: { key_id: randomUUID(), ...LEGACY, expires_at: null, last_used_at: null } },
      );
    }
  }

  async insert(doc: ApiKeyDoc): Promise<void> {
    await this.keys.insertOne(doc);
  }

  async byHash(hash: string): Promise<ApiKeyDoc | null> {
    return this.keys.findOne({ _id: hash });
  }

  /** The product's keys, oldest first. */
  async list(productId: string): Promise<ApiKeyDoc[]> {
    const docs = await this.keys.find({ product_id: productId }).toArray();
    return docs.sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || a.key_id.localeCompare(b.key_id));
  }

  async count(productId: string): Promise<number> {
    return this.keys.countDocuments({ product_id: productId });
  }

  async delete(productId: string, keyId: string): Promise<boolean> {
    const res = await this.keys.deleteOne({ product_id: productId, key_id: keyId });
    return res.deletedCount > 0;
  }

  /** Records a use at `now` unless one within LAST_USED_STEP_MS is recorded already. */
  async touch(hash: string, now: Date): Promise<void> {
    const stale = new Date(now.getTime() - LAST_USED_STEP_MS);
    await this.keys.updateOne(
      { _id: hash, $or: [{ last_used_at: null }, { last_used_at: { $lt: stale } }] },
      { $set: { last_used_at: now } },
    );
  }
}
