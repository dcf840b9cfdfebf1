import type { Collection, Db } from "mongodb";
import { isDuplicateKeyError } from "@meter/lib/mongo";
import { encodeKey } from "../domain/field-keys.ts";
import type { UsageEventDoc } from "./usage-events.ts";

/**
 * Running totals of one user in one billing period, keyed by
 * "<product>|<period start>|<period end>|<user>" (the user id last, so any string is safe).
 * Model names in the maps are field-key encoded (see domain/field-keys.ts).
 */
export interface CounterDoc {
  _id: string;
  product_id: string;
  user_id: string;
  period_start: Date;
  period_end: Date;
  /** Bumped by every application: the optimistic-concurrency guard of the ledger. */
  v: number;
  cost: number;
  tokens: number;
  tool_calls: number;
  events: number;
  tokens_by_model: Record<string, number>;
  cost_by_model: Record<string, number>;
  /** Ids of events added to the totals whose `uncounted` flag is not yet cleared. */
  applied: string[];
  plan_name: string | null;
  spend_limit: number | null;
  updated_at: Date;
}

export function counterId(productId: string, userId: string, start: Date, end: Date): string {
  return `${productId}|${start.toISOString()}|${end.toISOString()}|${userId}`;
}

type Pending = Pick<
  UsageEventDoc,
  "_id" | "product_id" | "user_id" | "period_start" | "period_end" | "plan_name" | "spend_limit" | "model" | "total_tokens" | "cost_total" | "tool_call_count"
>;

function increments(events: Pending[]): Record<string, number> {
  const inc: Record<string, number> = { v: 1, cost: 0, tokens: 0, tool_calls: 0, events: 0 };
  for (const e of events) {
    inc.cost! += e.cost_total;
    inc.tokens! += e.total_tokens;
    inc.tool_calls! += e.tool_call_count;
    inc.events! += 1;
    if (e.model !== null) {
      const key = encodeKey(e.model);
      inc[`tokens_by_model.${key}`] = (inc[`tokens_by_model.${key}`] ?? 0) + e.total_tokens;
      inc[`cost_by_model.${key}`] = (inc[`cost_by_model.${key}`] ?? 0) + e.cost_total;
    }
  }
  return inc;
}

/**
 * Adds stored events to their counter exactly once, without multi-document transactions.
 *
 * An event is counted when its `uncounted` flag is cleared. Each round reads the counter
 * (version v, `applied` ids), then the batch's events still flagged; the ones not in
 * `applied` are added with one write guarded by `v` that also records their ids in
 * `applied`. Then the hook runs, the flags are cleared, and the ids leave `applied`.
 * Invariant: an added event is in `applied` or unflagged, and the flag is cleared only
 * after the add. A round whose guard still matches saw no add since it read the counter, so
 * every event it adds was neither in `applied` nor unflagged then, i.e. never added. A
 * crash at any point leaves flagged events that a retry or the recovery sweep completes.
 */
export class Ledger {
  readonly counters: Collection<CounterDoc>;

  constructor(
    db: Db,
    private readonly events: Collection<UsageEventDoc>,
  ) {
    this.counters = db.collection<CounterDoc>("counters");
  }

  async get(id: string): Promise<CounterDoc | null> {
    return this.counters.findOne({ _id: id });
  }

  /**
   * Counts the still-uncounted events among `eventIds` (all of counter `id`). `beforeClear`
   * runs with the counter's state after the add and before the flags are cleared, so that
   * work derived from the totals (threshold crossings) is redone after a crash.
   */
  async count(id: string, eventIds: string[], beforeClear?: (counter: CounterDoc) => Promise<void>): Promise<void> {
    for (;;) {
      const counter = await this.counters.findOne({ _id: id }, { projection: { v: 1, applied: 1 } });
      const pending = await this.events
        .find(
          { _id: { $in: eventIds }, counter_id: id, uncounted: true },
          {
            projection: {
              product_id: 1, user_id: 1, period_start: 1, period_end: 1, plan_name: 1, spend_limit: 1,
              model: 1, total_tokens: 1, cost_total: 1, tool_call_count: 1,
            },
          },
        )
        .toArray();
      if (pending.length === 0) return;
      const applied = new Set(counter?.applied ?? []);
      const todo = pending.filter((e) => !applied.has(e._id));
      if (todo.length > 0) {
        const first = todo[0]!;
        try {
          const res = await this.counters.updateOne(
            { _id: id, v: counter?.v ?? 0 },
            {
              $inc: increments(todo),
              $push: { applied: { $each: todo.map((e) => e._id) } },
              $set: { plan_name: first.plan_name, spend_limit: first.spend_limit, updated_at: new Date() },
              $setOnInsert: {
                product_id: first.product_id,
                user_id: first.user_id,
                period_start: first.period_start,
                period_end: first.period_end,
              },
            } as never,
            { upsert: true },
          );
          if (res.matchedCount === 0 && res.upsertedCount === 0) continue;
        } catch (err) {
          if (isDuplicateKeyError(err)) continue; // another writer moved the version first
          throw err;
        }
      }
      if (beforeClear) {
        const after = await this.counters.findOne({ _id: id });
        if (after) await beforeClear(after);
      }
      const ids = pending.map((e) => e._id);
      await this.events.updateMany({ _id: { $in: ids } }, { $unset: { uncounted: "" } });
      await this.counters.updateOne({ _id: id }, { $pullAll: { applied: ids } } as never);
      return;
    }
  }

  /** Events left uncounted by an interrupted request, older than `olderThan`, by counter. */
  async stranded(olderThan: Date, limit: number): Promise<Map<string, string[]>> {
    const docs = await this.events
      .find({ uncounted: true, received_at: { $lt: olderThan } }, { projection: { counter_id: 1 } })
      .limit(limit)
      .toArray();
    const byCounter = new Map<string, string[]>();
    for (const d of docs) {
      const list = byCounter.get(d.counter_id) ?? [];
      list.push(d._id);
      byCounter.set(d.counter_id, list);
    }
    return byCounter;
  }
}
