import { randomUUID } from "node:crypto";
import { MongoServerError, type Collection, type Db } from "mongodb";
import { isDuplicateKeyError } from "@meter/lib/mongo";
import type { PlanValues, Rate } from "../settings.ts";

/**
 * A plan as stored. Maps keyed by model or tool name are kept as arrays of entries: names
 * such as "gpt-4.1" contain dots, which MongoDB field names handle badly.
 */
export interface PlanDoc {
  _id: string;
  product_id: string;
  name: string;
  max_spend_per_period: number | null;
  max_spend_per_session: number | null;
  session_timeout_minutes: number;
  soft_gate_at: number;
  hard_gate_at: number;
  model_limits: { model: string; max_tokens_per_period: number }[];
  cost_rates: ({ model: string } & Rate)[];
  default_cost_rate: Rate | null;
  tool_costs: { tool: string; cost: number }[];
  default_tool_cost: number;
  pre_call_estimate: boolean;
  pre_call_buffer_tokens: number;
  /** Incremented by every update; updates are conditional on it (optimistic concurrency). */
  version: number;
  created_at: Date;
  updated_at: Date;
}

export interface StoredPlan extends PlanValues {
  id: string;
  version: number;
  created_at: Date;
  updated_at: Date;
}

function toDocFields(v: PlanValues) {
  return {
    name: v.name,
    max_spend_per_period: v.max_spend_per_period,
    max_spend_per_session: v.max_spend_per_session,
    session_timeout_minutes: v.session_timeout_minutes,
    soft_gate_at: v.soft_gate_at,
    hard_gate_at: v.hard_gate_at,
    model_limits: Object.entries(v.model_limits).map(([model, max]) => ({ model, max_tokens_per_period: max })),
    cost_rates: Object.entries(v.cost_rates).map(([model, r]) => ({ model, input: r.input, output: r.output })),
    default_cost_rate: v.default_cost_rate,
    tool_costs: Object.entries(v.tool_costs).map(([tool, cost]) => ({ tool, cost })),
    default_tool_cost: v.default_tool_cost,
    pre_call_estimate: v.pre_call_estimate,
    pre_call_buffer_tokens: v.pre_call_buffer_tokens,
  };
}

function fromDoc(d: PlanDoc): StoredPlan {
  return {
    id: d._id,
    name: d.name,
    max_spend_per_period: d.max_spend_per_period,
    max_spend_per_session: d.max_spend_per_session,
    session_timeout_minutes: d.session_timeout_minutes,
    soft_gate_at: d.soft_gate_at,
    hard_gate_at: d.hard_gate_at,
    model_limits: Object.fromEntries(d.model_limits.map((l) => [l.model, l.max_tokens_per_period])),
    cost_rates: Object.fromEntries(d.cost_rates.map((r) => [r.model, { input: r.input, output: r.output }])),
    default_cost_rate: d.default_cost_rate ? { input: d.default_cost_rate.input, output: d.default_cost_rate.output } : null,
    tool_costs: Object.fromEntries(d.tool_costs.map((t) => [t.tool, t.cost])),
    default_tool_cost: d.default_tool_cost,
    pre_call_estimate: d.pre_call_estimate,
    pre_call_buffer_tokens: d.pre_call_buffer_tokens,
    version: d.version,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}

/** FerretDB reports a unique index violation by an update as a generic error naming it. */
function isUniqueViolation(err: unknown): boolean {
  return isDuplicateKeyError(err) || (err instanceof MongoServerError && /UNIQUE constraint failed/.test(err.message));
}

export class PlanStore {
  private readonly plans: Collection<PlanDoc>;

  constructor(db: Db) {
    this.plans = db.collection<PlanDoc>("plans");
  }

  async init(): Promise<void> {
    // Names are unique within a product: concurrent creations of one name yield one plan.
    await this.plans.createIndex({ product_id: 1, name: 1 }, { unique: true });
  }

  /** Inserts a plan; null when the product already has a plan of that name. */
  async insert(productId: string, values: PlanValues): Promise<StoredPlan | null> {
    const now = new Date();
    const doc: PlanDoc = {
      _id: randomUUID(),
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
    const doc = await this.plans.findOne({ _id: id, product_id: productId });
    return doc ? fromDoc(doc) : null;
  }

  async getMany(productId: string, ids: readonly string[]): Promise<StoredPlan[]> {
    if (ids.length === 0) return [];
    const docs = await this.plans.find({ _id: { $in: [...new Set(ids)] }, product_id: productId }).toArray();
    return docs.map(fromDoc);
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
      return doc ? fromDoc(doc) : "conflict";
    } catch (err) {
      if (isUniqueViolation(err)) return "duplicate";
      throw err;
    }
  }
}
