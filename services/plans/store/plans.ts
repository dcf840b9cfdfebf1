import { v7 as uuidv7 } from "uuid";
import { LRUCache } from "lru-cache";
import { MongoServerError, type Collection, type Db } from "mongodb";
import { findByIds, isDuplicateKeyError } from "@meter/lib/mongo";
import { LIMITS, PLAN_FIELDS, type PlanValues, type Rate } from "../domain/settings.ts";

/**
 * A plan as stored. Maps keyed by model or tool name are kept as arrays of entries: names
 * such as "gpt-4.1" contain dots, which MongoDB field names handle badly.
 */
export interface PlanDoc extends Omit<PlanValues, MapField> {
  _id: string;
  product_id: string;
  model_limits: { model: string; max_tokens_per_period: number }[];
  cost_rates: ({ model: string } & Rate)[];
  tool_costs: { tool: string; cost: number }[];
  /** Incremented by every update; updates are conditional on it (optimistic concurrency). */
  version: number;
  created_at: Date;
  updated_at: Date;
}

type MapField = "model_limits" | "cost_rates" | "tool_costs";

export interface StoredPlan extends PlanValues {
  id: string;
  version: number;
  created_at: Date;
  updated_at: Date;
}

function toDocFields(v: PlanValues): Omit<PlanDoc, "_id" | "product_id" | "version" | "created_at" | "updated_at"> {
  // Only the settings: `v` may be a stored plan carrying its id and version too.
  const settings = Object.fromEntries(PLAN_FIELDS.map((f) => [f, v[f]])) as unknown as PlanValues;
  return {
    ...settings,
    model_limits: Object.entries(v.model_limits).map(([model, max]) => ({ model, max_tokens_per_period: max })),
    cost_rates: Object.entries(v.cost_rates).map(([model, r]) => ({ model, input: r.input, output: r.output })),
    tool_costs: Object.entries(v.tool_costs).map(([tool, cost]) => ({ tool, cost })),
  };
}

function fromDoc(d: PlanDoc): StoredPlan {
  const { _id, product_id: _p, model_limits, cost_rates, tool_costs, ...rest } = d;
  return {
    ...rest,
    id: _id,
    model_limits: Object.fromEntries(model_limits.map((l) => [l.model, l.max_tokens_per_period])),
    cost_rates: Object.fromEntries(cost_rates.map((r) => [r.model, { input: r.input, output: r.output }])),
    tool_costs: Object.fromEntries(tool_costs.map((t) => [t.tool, t.cost])),
  };
}

/**
 * The ids of a product's plans, in creation order. A product's plans are read by these ids
 * (the embedded database answers only `_id` lookups from an index: a filter on `product_id`
 * read every product's plans, so one product's large plans slowed every listing), and the
 * limit of plans per product is one conditional write on it.
 */
interface PlanDirectoryDoc {
  /** The product id. */
  _id: string;
  ids: string[];
  /**
   * Set once the plans stored before the directory existed were added (one scan of the
   * collection per product, ever); until then ids may lack some.
   */
  complete?: boolean;
  /** Incremented by every change to the product's plans, after it (a cached listing of another version is stale). */
  version?: number;
}

/** Memory for cached listings; a listing of 50 plans at their limits takes about 45 MB. */
const LISTING_CACHE_BYTES = 64 * 1024 * 1024;
/** Backstop for a change whose version increment was lost (a crash between the two writes). */
const LISTING_TTL_MS = 60_000;

/** About what a plan takes in memory, for the listing cache's bound. */
function planBytes(p: StoredPlan): number {
  let n = 512 + p.name.length * 2;
  for (const m of [p.model_limits, p.cost_rates, p.tool_costs]) for (const k of Object.keys(m)) n += k.length * 2 + 64;
  return n;
}

/** FerretDB reports a unique index violation by an update as a generic error naming it. */
function isUniqueViolation(err: unknown): boolean {
  return isDuplicateKeyError(err) || (err instanceof MongoServerError && /UNIQUE constraint failed/.test(err.message));
}

/** Plans held by the cache of `resolved` at most: far more than products have plans in use. */
const CACHED_PLANS = 10_000;

export class PlanStore {
  private readonly plans: Collection<PlanDoc>;
  private readonly directory: Collection<PlanDirectoryDoc>;
  /** Plans as `resolved` last read them, for `cacheMs` (none when 0). */
  private readonly cache?: LRUCache<string, { product_id: string; plan: StoredPlan }>;
  /**
   * Each product's listing as last read, by directory version: a product listing its plans
   * again and again (at its limits, one read decodes megabytes) costs one small read by `_id`
   * while nothing changed, and always answers what is stored (versions are shared by replicas).
   */
  private readonly listings = new LRUCache<string, { version: number; plans: StoredPlan[]; bytes: number }>({
    maxSize: LISTING_CACHE_BYTES,
    sizeCalculation: (v) => v.bytes,
    ttl: LISTING_TTL_MS,
  });

  constructor(db: Db, opts: { cacheMs?: number } = {}) {
    this.plans = db.collection<PlanDoc>("plans");
    this.directory = db.collection<PlanDirectoryDoc>("plan_directory");
    if (opts.cacheMs) this.cache = new LRUCache({ max: CACHED_PLANS, ttl: opts.cacheMs });
  }

  async init(): Promise<void> {
    // Names are unique within a product: concurrent creations of one name yield one plan.
    await this.plans.createIndex({ product_id: 1, name: 1 }, { unique: true });
  }

  /** The product's directory, completed first when needed. */
  private async directoryOf(productId: string): Promise<{ ids: string[]; version: number }> {
    const doc = await this.directory.findOne({ _id: productId });
    if (doc?.complete) return { ids: doc.ids, version: doc.version ?? 0 };
    const stored = await this.plans.find({ product_id: productId }, { projection: { _id: 1 } }).toArray();
    const after = await this.directory.findOneAndUpdate(
      { _id: productId },
      { $addToSet: { ids: { $each: stored.map((d) => d._id) } }, $set: { complete: true }, $inc: { version: 1 } },
      { upsert: true, returnDocument: "after" },
    );
    return { ids: after?.ids ?? [], version: after?.version ?? 0 };
  }

  private async idsOf(productId: string): Promise<string[]> {
    return (await this.directoryOf(productId)).ids;
  }

  /** Marks the product's plans changed: listings cached by any replica are stale from now. */
  private async changed(productId: string): Promise<void> {
    this.listings.delete(productId);
    await this.directory.updateOne({ _id: productId }, { $inc: { version: 1 } });
  }

  /**
   * Takes `count` places in the product's directory for new plans, in one conditional write:
   * the ids, or null when they would take the product past LIMITS.plansPerProduct. Places of plans not
   * created after all are given back with `release`.
   */
  async reserve(productId: string, count: number): Promise<string[] | null> {
    await this.idsOf(productId);
    // Time-ordered and monotonic within the process: plans created in the same millisecond
    // (one request creating several) still list in creation order.
    const ids = Array.from({ length: count }, () => uuidv7());
    const res = await this.directory.updateOne(
      { _id: productId, [`ids.${LIMITS.plansPerProduct - count}`]: { $exists: false } },
      { $push: { ids: { $each: ids } }, $inc: { version: 1 } },
    );
    return res.modifiedCount === 1 ? ids : null;
  }

  /**
   * Ends a creation: gives back the places of `unused` ids and marks the product's plans
   * changed (again: a listing read between `reserve` and the inserts missed them).
   */
  async release(productId: string, unused: readonly string[]): Promise<void> {
    this.listings.delete(productId);
    await this.directory.updateOne({ _id: productId }, { $pullAll: { ids: [...unused] }, $inc: { version: 1 } });
  }

  /** How many plans the product has (its directory's length). */
  async count(productId: string): Promise<number> {
    return (await this.idsOf(productId)).length;
  }

  /** Inserts a plan under an id from `reserve`; null when the product already has a plan of that name. */
  async insert(productId: string, id: string, values: PlanValues): Promise<StoredPlan | null> {
    const now = new Date();
    const doc: PlanDoc = {
      _id: id,
      product_id: productId,
      ...toDocFields(values),
      version: 1,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.plans.insertOne(doc);
      return fromDoc(doc);
    } catch (err) {
      if (isDuplicateKeyError(err)) return null;
      throw err;
    }
  }

  /**
   * The product's plans in creation order, read by id: the cost is the product's own plans,
   * and while they are unchanged, one read of its directory.
   */
  async list(productId: string): Promise<StoredPlan[]> {
    const { ids, version } = await this.directoryOf(productId);
    const hit = this.listings.get(productId);
    if (hit && hit.version === version) return hit.plans;
    const docs = (await this.byIds(ids)).filter((d) => d.product_id === productId);
    docs.sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || (a._id < b._id ? -1 : a._id > b._id ? 1 : 0));
    const plans = docs.map(fromDoc);
    const bytes = plans.reduce((n, p) => n + planBytes(p), 64);
    if (bytes <= LISTING_CACHE_BYTES) this.listings.set(productId, { version, plans, bytes });
    return plans;
  }

  async get(productId: string, id: string): Promise<StoredPlan | null> {
    // Filtered by `_id` alone, the only filter the embedded database answers from an index;
    // a plan of another product reads as missing.
    const doc = await this.plans.findOne({ _id: id });
    return doc?.product_id === productId ? fromDoc(doc) : null;
  }

  /** One query by `_id` list; plans of another product read as missing. */
  async getMany(productId: string, ids: readonly string[]): Promise<StoredPlan[]> {
    return (await this.byIds(ids)).filter((d) => d.product_id === productId).map(fromDoc);
  }

  private async byIds(ids: Iterable<string>): Promise<PlanDoc[]> {
    return findByIds(this.plans, [...new Set(ids)]);
  }

  /**
   * The plans of a ResolveUsers answer (every session bootstrap and every ingested batch):
   * from a cache kept `cacheMs` (PLAN_CACHE_MS, 1 s by default), saving one database read in
   * the session's chain. A change made through this process replaces its entry at once; one
   * made through another replica shows here within `cacheMs`, as SPEC.md allows ("plan changes
   * take effect on the next session bootstrap ... typically within seconds").
   */
  async resolved(productId: string, ids: readonly string[]): Promise<StoredPlan[]> {
    if (!this.cache) return this.getMany(productId, ids);
    const out: StoredPlan[] = [];
    const missing: string[] = [];
    for (const id of new Set(ids)) {
      const hit = this.cache.get(id);
      if (hit === undefined) missing.push(id);
      else if (hit.product_id === productId) out.push(hit.plan);
    }
    for (const d of await this.byIds(missing)) {
      const plan = fromDoc(d);
      this.cache.set(d._id, { product_id: d.product_id, plan });
      if (d.product_id === productId) out.push(plan);
    }
    return out;
  }

  /**
   * Replaces a plan's settings if it is still at `version`. Returns the new plan, "conflict"
   * when another update came first, or "duplicate" when the new name is taken.
   */
  async replace(
    productId: string,
    current: StoredPlan,
    values: PlanValues,
  ): Promise<StoredPlan | "conflict" | "duplicate"> {
    try {
      const doc = await this.plans.findOneAndUpdate(
        { _id: current.id, product_id: productId, version: current.version },
        { $set: { ...toDocFields(values), updated_at: new Date() }, $inc: { version: 1 } },
        { returnDocument: "after" },
      );
      if (!doc) return "conflict";
      const plan = fromDoc(doc);
      this.cache?.set(doc._id, { product_id: doc.product_id, plan });
      await this.changed(productId);
      return plan;
    } catch (err) {
      if (isUniqueViolation(err)) return "duplicate";
      throw err;
    }
  }
}
