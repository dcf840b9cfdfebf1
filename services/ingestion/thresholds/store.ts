import { createHash } from "node:crypto";
import { DbStore, deleteInRounds, insertIgnoringDuplicates } from "@meter/lib/mongo";

/**
 * A spend threshold reached by a user in a billing period. `_id` is
 * "<counter id>|<pct>": the primary key makes each crossing exist once per user, billing
 * period and threshold, however many requests or replicas notice it.
 */
export interface CrossingDoc {
  _id: string;
  /** Stable id handed to the webhooks service (its idempotency key). */
  crossing_id: string;
  product_id: string;
  user_id: string;
  threshold_pct: number;
  current_spend: number;
  spend_limit: number;
  plan_name: string;
  tokens_total: number;
  /** Keyed by encoded model name, as in the counter (see encodeKey). */
  cost_by_model: Record<string, number>;
  period_start: Date;
  period_end: Date;
  crossed_at: Date;
}

export function crossingKey(counterId: string, pct: number): { _id: string; crossing_id: string } {
  const _id = `${counterId}|${pct}`;
  return { _id, crossing_id: `thr_${createHash("sha256").update(_id).digest("hex").slice(0, 32)}` };
}

export class CrossingStore extends DbStore {
  readonly crossings = this.db.collection<CrossingDoc>("threshold_crossings");

  async init(): Promise<void> {
    await this.crossings.createIndex({ product_id: 1, user_id: 1 });
  }

  async exists(id: string): Promise<boolean> {
    return (await this.crossings.findOne({ _id: id }, { projection: { _id: 1 } })) !== null;
  }

  /** Records crossings not recorded before; returns how many were new. */
  async record(docs: CrossingDoc[]): Promise<number> {
    return (await insertIgnoringDuplicates(this.crossings, docs)).size;
  }

  /** Retention: crossings of periods that ended before `t` (a daily scan). */
  async deleteEndedBefore(t: Date): Promise<number> {
    return await deleteInRounds(this.crossings, { period_end: { $lt: t } });
  }

  async forUser(productId: string, userId: string): Promise<CrossingDoc[]> {
    return this.crossings.find({ product_id: productId, user_id: userId }).sort({ threshold_pct: 1 }).toArray();
  }
}
