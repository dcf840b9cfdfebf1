import type { Collection, Db } from "mongodb";

export interface ApiKeyDoc {
  /** SHA-256 of the key: lookups are an equality match on the primary key. */
  _id: string;
  product_id: string;
  /** First characters of the key, to tell keys apart without revealing them. */
  display_prefix: string;
  created_at: Date;
}

export class ApiKeyStore {
  private readonly keys: Collection<ApiKeyDoc>;

  constructor(db: Db) {
    this.keys = db.collection<ApiKeyDoc>("api_keys");
  }

  async init(): Promise<void> {
    await this.keys.createIndex({ product_id: 1 });
  }

  async insert(doc: ApiKeyDoc): Promise<void> {
    await this.keys.insertOne(doc);
  }

  async productIdForHash(hash: string): Promise<string | null> {
    const doc = await this.keys.findOne({ _id: hash }, { projection: { product_id: 1 } });
    return doc?.product_id ?? null;
  }
}
