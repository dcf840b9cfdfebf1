import { randomBytes, randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import { isDuplicateKeyError } from "@meter/lib/mongo";
import { slugify } from "../keys.ts";

export interface ProductDoc {
  _id: string;
  name: string;
  slug: string;
  contact_name: string | null;
  contact_email: string | null;
  created_at: Date;
}

export class ProductStore {
  private readonly products: Collection<ProductDoc>;

  constructor(db: Db) {
    this.products = db.collection<ProductDoc>("products");
  }

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
}
