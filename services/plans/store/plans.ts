import { v7 as uuidv7 } from "uuid";
import { LRUCache } from "lru-cache";
import { MongoServerError, type Collection, type Db } from "mongodb";
import { findByIds, insertUnlessPresent, isDuplicateKeyError } from "@meter/lib/mongo";
import { dueForRefresh } from "@meter/lib/refresh-ahead";
import { WINDOW_DEFAULTS } from "../domain/limits.ts";
import { CREDIT_DEFAULTS } from "../domain/credits.ts";
import { LIMITS, PLAN_FIELDS, planSize, type PlanValues, type Rate } from "../domain/settings.ts";

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
    // Plans stored before windows or credits existed lack their fields.
    ...WINDOW_DEFAULTS,
    ...CREDIT_DEFAULTS,
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
  /**
   * planSize of the product's plans together, bounded by LIMITS.planBytesPerProduct. Growth
   * is taken here before the plan is written and shrinkage given back after, so that a
   * failure in between leaves it over, never under. Absent on directories of earlier
   * versions until counted once (countBytes).
   */
  bytes?: number;
}

/** Why `reserve` or `replace` refused: the product's plans would be too many or too large. */
export type PlanLimit = { limit: "plans"; has: number } | { limit: "bytes"; has: number };

/** Memory for cached listings; a product's listing at LIMITS.planBytesPerProduct takes a few MB. */
const LISTING_CACHE_BYTES = 64 * 1024 * 1024;
/** Backstop for a change whose version increment was lost (a crash between the two writes). */
const LISTING_TTL_MS = 60_000;

/** About what a plan takes in memory, for the listing cache's bound. */
function planBytes(p: StoredPlan): number {
  let n = 512 + p.name.length * 2;
  for (const m of [p.model_limits, p.cost_rates, p.tool_costs]) for (const k of Object.keys(m)) n += k.length * 2 + 64;
  n += p.limits.length * 256;
  return n;
}

/** Creation order (ties by id). */
function byCreation(a: Pick<PlanDoc, "_id" | "created_at">, b: Pick<PlanDoc, "_id" | "created_at">): number {
  return a.created_at.getTime() - b.created_at.getTime() || (a._id < b._id ? -1 : a._id > b._id ? 1 : 0);
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

  /** Plans being read again ahead of their expiry (resolved). */
  private readonly refreshing = new Set<string>();

  /** `clock` (ms, monotonic) is the cache's, for tests; performance.now() by default. */
  constructor(db: Db, opts: { cacheMs?: number; clock?: () => number } = {}) {
    this.plans = db.collection<PlanDoc>("plans");
    this.directory = db.collection<PlanDirectoryDoc>("plan_directory");
    if (opts.cacheMs) this.cache = new LRUCache({ max: CACHED_PLANS, ttl: opts.cacheMs, ...(opts.clock && { perf: { now: opts.clock } }) });
  }

  async init(): Promise<void> {
    // Names are unique within a product: concurrent creations of one name yield one plan.
    await this.plans.createIndex({ product_id: 1, name: 1 }, { unique: true });
  }

  /** The product's directory, completed first when needed. */
  private async directoryOf(productId: string): Promise<{ ids: string[]; version: number; bytes: number }> {
    const doc = await this.directory.findOne({ _id: productId });
    if (doc?.complete && doc.bytes !== undefined) return { ids: doc.ids, version: doc.version ?? 0, bytes: doc.bytes };
    let ids = doc?.ids ?? [];
    let version = doc?.version ?? 0;
    if (!doc?.complete) {
      const stored = await this.plans.find({ product_id: productId }, { projection: { _id: 1 } }).toArray();
      const after = await this.directory.findOneAndUpdate(
        { _id: productId },
        { $addToSet: { ids: { $each: stored.map((d) => d._id) } }, $set: { complete: true }, $inc: { version: 1 } },
        { upsert: true, returnDocument: "after" },
      );
      ids = after?.ids ?? [];
      version = after?.version ?? 0;
      if (after?.bytes !== undefined) return { ids, version, bytes: after.bytes };
    }
    return { ids, version, bytes: await this.countBytes(productId, ids) };
  }

  /**
   * Counts the bytes of a directory that has none (once per product, ever): every write
   * reads the directory first, so none has taken or given back bytes before this.
   */
  private async countBytes(productId: string, ids: string[]): Promise<number> {
    const counted = (await this.byIds(ids)).filter((d) => d.product_id === productId).reduce((n, d) => n + planSize(fromDoc(d)), 0);
    const after = await this.directory.findOneAndUpdate(
      { _id: productId, bytes: { $exists: false } },
      { $set: { bytes: counted } },
      { returnDocument: "after" },
    );
    if (after) return counted;
    return (await this.directory.findOne({ _id: productId }))?.bytes ?? counted;
  }

  private async idsOf(productId: string): Promise<string[]> {
    return (await this.directoryOf(productId)).ids;
  }

  /**
   * Marks the product's plans changed: listings cached by any replica are stale from now;
   * `bytes` (negative or 0) gives back what a plan's change freed.
   */
  private async changed(productId: string, bytes = 0): Promise<void> {
    this.listings.delete(productId);
    await this.directory.updateOne({ _id: productId }, { $inc: { version: 1, bytes } });
  }

  /** Takes `bytes` more for the product's plans, unless that passes the limit: the total before, when refused. */
  private async grow(productId: string, bytes: number): Promise<number | null> {
    const res = await this.directory.updateOne(
      { _id: productId, bytes: { $lte: LIMITS.planBytesPerProduct - bytes } },
      { $inc: { bytes } },
    );
    return res.modifiedCount === 1 ? null : (await this.directoryOf(productId)).bytes;
  }

  /**
   * Takes places in the product's directory for new plans of `sizes` (planSize), in one
   * conditional write: the ids, or which limit they would take the product past
   * (LIMITS.plansPerProduct, LIMITS.planBytesPerProduct). Places and bytes of plans not
   * created after all are given back with `release`.
   */
  async reserve(productId: string, sizes: readonly number[]): Promise<string[] | PlanLimit> {
    const before = await this.directoryOf(productId);
    const count = sizes.length;
    // `ids.<negative>` never exists: more than the limit in one request is refused here.
    if (count > LIMITS.plansPerProduct) return { limit: "plans", has: before.ids.length };
    const bytes = sizes.reduce((n, b) => n + b, 0);
    // Time-ordered and monotonic within the process: plans created in the same millisecond
    // (one request creating several) still list in creation order.
    const ids = Array.from({ length: count }, () => uuidv7());
    const res = await this.directory.updateOne(
      {
        _id: productId,
        [`ids.${LIMITS.plansPerProduct - count}`]: { $exists: false },
        bytes: { $lte: LIMITS.planBytesPerProduct - bytes },
      },
      { $push: { ids: { $each: ids } }, $inc: { version: 1, bytes } },
    );
    if (res.modifiedCount === 1) return ids;
    const now = await this.directoryOf(productId);
    return now.ids.length + count > LIMITS.plansPerProduct ? { limit: "plans", has: now.ids.length } : { limit: "bytes", has: now.bytes };
  }

  /**
   * Ends a creation: gives back the places and bytes (`sizes`) of `unused` ids and marks the
   * product's plans changed (again: a listing read between `reserve` and the inserts missed them).
   */
  async release(productId: string, unused: readonly { id: string; size: number }[]): Promise<void> {
    this.listings.delete(productId);
    const bytes = unused.reduce((n, u) => n + u.size, 0);
    await this.directory.updateOne(
      { _id: productId },
      { $pullAll: { ids: unused.map((u) => u.id) }, $inc: { version: 1, bytes: -bytes } },
    );
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
    return (await insertUnlessPresent(this.plans, doc)) ? fromDoc(doc) : null;
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
    docs.sort(byCreation);
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
   * made through another replica shows here within `cacheMs`, as the API allows (a plan change
   * takes effect on the next session load, typically within seconds). A plan asked for in the
   * second half of its time is read again in the background while the cached one is answered,
   * so under steady traffic no call waits for the plan's read, and none is answered a plan older
   * than `cacheMs`.
   */
  async resolved(productId: string, ids: readonly string[]): Promise<StoredPlan[]> {
    const cache = this.cache;
    if (!cache) return this.getMany(productId, ids);
    const out: StoredPlan[] = [];
    const missing: string[] = [];
    const ageing: string[] = [];
    for (const id of new Set(ids)) {
      const hit = cache.get(id);
      if (hit === undefined) missing.push(id);
      else {
        if (hit.product_id === productId) out.push(hit.plan);
        if (dueForRefresh(cache, id) && !this.refreshing.has(id)) ageing.push(id);
      }
    }
    if (ageing.length > 0) void this.refresh(ageing);
    for (const d of await this.byIds(missing)) {
      const plan = this.cached(d);
      if (d.product_id === productId) out.push(plan);
    }
    return out;
  }

  /** Caches a plan as read, unless the cache already holds a later version (a change through this process while the read was on its way). */
  private cached(d: PlanDoc): StoredPlan {
    const held = this.cache!.peek(d._id);
    if (held && held.plan.version > d.version) return held.plan;
    const plan = fromDoc(d);
    this.cache!.set(d._id, { product_id: d.product_id, plan });
    return plan;
  }

  /** Reads `ids` again into the cache; a failure leaves the entries to expire, and the next call reads them itself. */
  private async refresh(ids: string[]): Promise<void> {
    for (const id of ids) this.refreshing.add(id);
    try {
      for (const d of await this.byIds(ids)) this.cached(d);
    } catch {
      // Nothing waits on this read.
    } finally {
      for (const id of ids) this.refreshing.delete(id);
    }
  }

  /**
   * Replaces a plan's settings if it is still at `version`. Returns the new plan, "conflict"
   * when another update came first, "duplicate" when the new name is taken, or the limit of
   * LIMITS.planBytesPerProduct when the product's plans would grow past it.
   */
  async replace(
    productId: string,
    current: StoredPlan,
    values: PlanValues,
  ): Promise<StoredPlan | "conflict" | "duplicate" | PlanLimit> {
    await this.directoryOf(productId);
    const delta = planSize(values) - planSize(current);
    if (delta > 0) {
      const has = await this.grow(productId, delta);
      if (has !== null) return { limit: "bytes", has };
    }
    // Growth taken for a write that did not happen goes back; after any other failure the
    // write may have happened, so it stays (the count may be over, never under).
    const giveBack = async <T>(outcome: T): Promise<T> => {
      if (delta > 0) await this.directory.updateOne({ _id: productId }, { $inc: { bytes: -delta } });
      return outcome;
    };
    let doc: PlanDoc | null;
    try {
      doc = await this.plans.findOneAndUpdate(
        { _id: current.id, product_id: productId, version: current.version },
        { $set: { ...toDocFields(values), updated_at: new Date() }, $inc: { version: 1 } },
        { returnDocument: "after" },
      );
    } catch (err) {
      if (isUniqueViolation(err)) return giveBack("duplicate" as const);
      throw err;
    }
    if (!doc) return giveBack("conflict" as const);
    const plan = fromDoc(doc);
    this.cache?.set(doc._id, { product_id: doc.product_id, plan });
    await this.changed(productId, Math.min(delta, 0));
    return plan;
  }

  /**
   * The names of the product's plans of these ids (all of them when absent), read without
   * their maps: what a listing of users shows of their plans.
   */
  async names(productId: string, ids?: readonly string[]): Promise<Map<string, string>> {
    let wanted = ids;
    if (!wanted) {
      const directory = await this.directoryOf(productId);
      const hit = this.listings.get(productId);
      if (hit && hit.version === directory.version) return new Map(hit.plans.map((p) => [p.id, p.name]));
      wanted = directory.ids;
    }
    const docs = (await findByIds(this.plans, [...new Set(wanted)], { projection: { _id: 1, product_id: 1, name: 1, created_at: 1 } })).filter(
      (d) => d.product_id === productId,
    );
    docs.sort(byCreation);
    return new Map(docs.map((d) => [d._id, d.name]));
  }
}
