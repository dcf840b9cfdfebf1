import { randomBytes, randomUUID } from "node:crypto";
import { DbStore, isDuplicateKeyError } from "@meter/lib/mongo";
import { slugify } from "../domain/keys.ts";

export interface ProductDoc {
  _id: string;
  name: string;
  slug: string;
  contact_name: string | null;
  contact_email: string | null;
  created_at: Date;
  /** Until when a change of the product's keys holds the product (see withKeysLock). */
  keys_lock_until?: Date;
  keys_lock_holder?: string;
}

/** How long a crashed holder of a product's keys lock can hold it. */
const KEYS_LOCK_MS = 10_000;

export class ProductStore extends DbStore {
  private readonly products = this.db.collection<ProductDoc>("products");

  async init(): Promise<void> {
    await this.products.createIndex({ slug: 1 }, { unique: true });
  }

  /** Inserts a product under a unique slug, adding a random suffix when the name's slug is taken. */
  async create(input: { name: string; contact_name: string | null; contact_email: string | null }): Promise<ProductDoc> {
    const base = slugify(input.name);
    for (let attempt = 0; ; attempt++) {
      const doc: ProductDoc = {
        _id: randomUUID(),
        name: input.name,
        slug: attempt === 0 ? base : `${base}-${randomBytes(3).toString("hex")}`,
        contact_name: input.contact_name,
        contact_email: input.contact_email,
        created_at: new Date(),
      };
      try {
        await this.products.insertOne(doc);
        return doc;
      } catch (err) {
        if (!isDuplicateKeyError(err) || attempt >= 5) throw err;
      }
    }
  }

  async get(id: string): Promise<ProductDoc | null> {
    return this.products.findOne({ _id: id });
  }

  /**
   * Runs `fn` while holding the product's keys lock: a conditional write on the product's own
   * document, so that two replicas revoking its last two admin keys at once cannot both see
   * the other key still there. A holder that crashed frees it after KEYS_LOCK_MS. Null when
   * the lock stays taken for `waitMs`.
   */
  async withKeysLock<T>(productId: string, fn: () => Promise<T>, waitMs = 3_000): Promise<{ value: T } | null> {
    const holder = randomUUID();
    const deadline = Date.now() + waitMs;
    for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
      const now = new Date();
      const res = await this.products.updateOne(
        { _id: productId, $or: [{ keys_lock_until: { $exists: false } }, { keys_lock_until: { $lt: now } }] },
        { $set: { keys_lock_until: new Date(now.getTime() + KEYS_LOCK_MS), keys_lock_holder: holder } },
      );
      if (res.modifiedCount === 1) break;
      if (Date.now() + delay > deadline) return null;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
    try {
      return { value: await fn() };
    } finally {
      await this.products.updateOne({ _id: productId, keys_lock_holder: holder }, { $set: { keys_lock_until: new Date(0) } });
    }
  }
}
