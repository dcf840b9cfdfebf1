import { v7 as uuidv7 } from "uuid";
import { LRUCache } from "lru-cache";
import { MongoServerError, type Collection, type Db } from "mongodb";
import { findByIds, isDuplicateKeyError } from "@meter/lib/mongo";
import { PLAN_FIELDS, type PlanValues, type Rate } from "../settings.ts";

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

/** FerretDB reports a unique index violation by an update as a generic error naming it. */
function isUniqueViolation(err: unknown): boolean {
  return isDuplicateKeyError(err) || (err instanceof MongoServerError && /UNIQUE constraint failed/.test(err.message));
}

/** Plans held by the cache of `resolved` at most: far more than products have plans in use. */
const CACHED_PLANS = 10_000;

export class PlanStore {
  private readonly plans: Collection<PlanDoc>;
  /** Plans as `resolved` last read them, for `cacheMs` (none when 0). */
  private readonly cache?: LRUCache<string, { product_id: string; plan: StoredPlan }>;

  constructor(db: Db, opts: { cacheMs?: number } = {}) {
    this.plans = db.collection<PlanDoc>("plans");
    if (opts.cacheMs) this.cache = new LRUCache({ max: CACHED_PLANS, ttl: opts.cacheMs });
  }

  async init(): Promise<void> {
    // Names are unique within a product: concurrent creations of one name yield one plan.
    await this.plans.createIndex({ product_id: 1, name: 1 }, { unique: true });
  }

  /** Inserts a plan; null when the product already has a plan of that name. */
  async insert(productId: string, values: PlanValues): Promise<StoredPlan | null> {
    const now = new Date();
    const doc: PlanDoc = {
      // Time-ordered and monotonic within the process: plans created in the same millisecond
      // (one request creating several) still list in creation order.
      _id: uuidv7(),
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

  async list(productId: string): Promise<StoredPlan[]> {
    const docs = await this.plans.find({ product_id: productId }).sort({ created_at: 1, _id: 1 }).toArray();
    return docs.map(fromDoc);
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
      return plan;
    } catch (err) {
      if (isUniqueViolation(err)) return "duplicate";
      throw err;
    }
  }
}
