import { DbStore } from "@meter/lib/mongo";

export interface EndpointDoc {
  _id: string;
  product_id: string;
  url: string;
  subscribed_events: string[];
  description: string | null;
  enabled: boolean;
  /** The signing secret sealed with SecretBox; never stored in plain text. */
  secret_sealed: string;
  created_at: Date;
  updated_at: Date;
}

export type EndpointChanges = Partial<Pick<EndpointDoc, "url" | "subscribed_events" | "description" | "enabled" | "secret_sealed">>;

export class EndpointStore extends DbStore {
  private readonly col = this.db.collection<EndpointDoc>("endpoints");

  async init(): Promise<void> {
    await this.col.createIndex({ product_id: 1, created_at: 1 });
    await this.col.createIndex({ subscribed_events: 1, enabled: 1 });
  }

  async insert(doc: EndpointDoc): Promise<void> {
    await this.col.insertOne(doc);
  }

  list(productId: string): Promise<EndpointDoc[]> {
    return this.col.find({ product_id: productId }).sort({ created_at: 1, _id: 1 }).toArray();
  }

  count(productId: string): Promise<number> {
    return this.col.countDocuments({ product_id: productId });
  }

  get(productId: string, id: string): Promise<EndpointDoc | null> {
    return this.col.findOne({ _id: id, product_id: productId });
  }

  /** Applies the changes and returns the updated endpoint, or null when it does not exist. */
  async update(productId: string, id: string, changes: EndpointChanges): Promise<EndpointDoc | null> {
    const res = await this.col.updateOne({ _id: id, product_id: productId }, { $set: { ...changes, updated_at: new Date() } });
    return res.matchedCount === 0 ? null : this.get(productId, id);
  }

  async delete(productId: string, id: string): Promise<boolean> {
    const res = await this.col.deleteOne({ _id: id, product_id: productId });
    return res.deletedCount === 1;
  }

  /** Every endpoint's id and sealed secret, of every product (the re-seal pass at start). */
  sealedSecrets(): AsyncIterable<Pick<EndpointDoc, "_id" | "secret_sealed">> {
    return this.col.find({}, { projection: { secret_sealed: 1 } });
  }

  /** Replaces a sealed secret unless it changed meanwhile (a rotation through the API wins). */
  async reseal(id: string, from: string, to: string): Promise<boolean> {
    const res = await this.col.updateOne({ _id: id, secret_sealed: from }, { $set: { secret_sealed: to } });
    return res.modifiedCount === 1;
  }

  /** Enabled endpoints of the product subscribed to the type. */
  subscribed(productId: string, type: string): Promise<EndpointDoc[]> {
    return this.col.find({ product_id: productId, subscribed_events: type, enabled: true }).toArray();
  }

  /** Products with at least one enabled endpoint subscribed to the type. */
  async productsSubscribedTo(type: string): Promise<string[]> {
    const rows = await this.col
      .aggregate<{ _id: string }>([{ $match: { subscribed_events: type, enabled: true } }, { $group: { _id: "$product_id" } }])
      .toArray();
    return rows.map((r) => r._id).sort();
  }
}
