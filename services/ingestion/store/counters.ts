import type { Collection, Db, Filter, UpdateFilter } from "mongodb";
import { isDuplicateKeyError } from "@meter/lib/mongo";
import { encodeKey } from "../domain/field-keys.ts";
import type { UsageEventDoc } from "./usage-events.ts";

/**
 * Running totals of one user in one billing period, or in one calendar month (what usage of
 * `current_month` and `YYYY-MM` reads): one document each, changed only by `$inc`. Model
 * names in the maps are field-key encoded (see domain/field-keys.ts).
 */
export interface CounterDoc extends Totals {
  _id: string;
  product_id: string;
  user_id: string;
  period_start: Date;
  /** End of the window as last attributed (a late renewal may shorten a rolled-on window). */
  period_end: Date;
  /**
   * Jobs whose events were added and whose job is not closed yet: the guard that makes a
   * retried or taken-over job add its events once. Pulled again once the job is marked
   * counted, so it holds only the jobs in flight.
   */
  jobs: string[];
}

export interface Totals {
  cost: number;
  tokens: number;
  tool_calls: number;
  events: number;
  tokens_by_model: Record<string, number>;
  cost_by_model: Record<string, number>;
}

/**
 * "<product>|<period start>|<user>": a period is found by its start, so a window rolled on
 * from a lapsed subscription and the renewal recorded late for the same start share one
 * counter (their ends may differ by the length of a month).
 */
export function counterId(productId: string, userId: string, start: Date): string {
  return `${productId}|${start.toISOString()}|${userId}`;
}

/** "<product>|month|<YYYY-MM>|<user>": apart from period counters even when a period is a calendar month. */
export function monthCounterId(productId: string, userId: string, monthStart: Date): string {
  return `${productId}|month|${monthStart.toISOString().slice(0, 7)}|${userId}`;
}

export type Countable = Pick<UsageEventDoc, "product_id" | "user_id" | "model" | "total_tokens" | "cost_total" | "tool_call_count">;

/** One counter's share of a job: the sums of the job's events for that counter. */
export interface CounterDelta {
  id: string;
  productId: string;
  userId: string;
  start: Date;
  end: Date;
  add: Totals;
  /** What of the delta was spent from each budget lease (period counters only). */
  leases?: Record<string, LeaseSpend>;
  /** Some of the delta's events were not spent from a lease (period counters only). */
  unleased?: boolean;
}

/** Usage spent from one lease: dollars, and tokens by field-key encoded model. */
export interface LeaseSpend {
  cost: number;
  tokens: Record<string, number>;
}

export function delta(id: string, start: Date, end: Date, events: readonly Countable[]): CounterDelta {
  const first = events[0]!;
  const add: Totals = { cost: 0, tokens: 0, tool_calls: 0, events: 0, tokens_by_model: {}, cost_by_model: {} };
  for (const e of events) {
    add.cost += e.cost_total;
    add.tokens += e.total_tokens;
    add.tool_calls += e.tool_call_count;
    add.events += 1;
    if (e.model !== null) {
      const key = encodeKey(e.model);
      add.tokens_by_model[key] = (add.tokens_by_model[key] ?? 0) + e.total_tokens;
      add.cost_by_model[key] = (add.cost_by_model[key] ?? 0) + e.cost_total;
    }
  }
  return { id, productId: first.product_id, userId: first.user_id, start, end, add };
}

/**
 * Counters as single documents. A job adds its share to each counter with one guarded
 * update, `{_id, jobs: {$ne: job}}` + `$inc` + `$push: {jobs: job}`, upserting: a single-
 * document update is atomic on MongoDB and on the embedded database (whose writes run one
 * at a time), so a job's second addition finds its id in `jobs` and changes nothing (the
 * upsert then collides on `_id`: that duplicate key means "already added").
 */
export class CounterStore {
  readonly counters: Collection<CounterDoc>;

  constructor(db: Db) {
    this.counters = db.collection<CounterDoc>("counters");
  }

  /**
   * Drops the unique `job_key` index of the snapshot chains this collection held before:
   * documents without that field would all collide on it.
   */
  async init(): Promise<void> {
    await this.counters.dropIndex("job_key_1").catch(() => {});
  }

  async get(id: string): Promise<CounterDoc | null> {
    return this.counters.findOne({ _id: id });
  }

  /** Adds every delta of job `jobId` to its counter, each at most once however often this runs. */
  async add(jobId: string, deltas: readonly CounterDelta[]): Promise<void> {
    await eachConcurrently(deltas, (d) => this.addOne(jobId, d));
  }

  private async addOne(jobId: string, d: CounterDelta): Promise<void> {
    const { filter, update } = addOp(jobId, d);
    for (;;) {
      try {
        await this.counters.updateOne(filter, update, { upsert: true });
        return;
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
        // Either the job is there already, or (MongoDB) a concurrent upsert created the
        // document first: then the guarded update now matches it.
        const doc = await this.counters.findOne({ _id: d.id }, { projection: { jobs: 1 } });
        if (doc?.jobs.includes(jobId)) return;
      }
    }
  }

  /** Drops the job's guard entries once the job is marked counted (nothing can add it again). */
  async release(jobId: string, ids: readonly string[]): Promise<void> {
    await eachConcurrently(ids, (id) => this.counters.updateOne({ _id: id }, { $pull: { jobs: jobId } }));
  }
}

function addOp(jobId: string, d: CounterDelta) {
  const { tokens_by_model, cost_by_model, ...flat } = d.add;
  const inc: Record<string, number> = { ...flat };
  for (const [k, v] of Object.entries(tokens_by_model)) inc[`tokens_by_model.${k}`] = v;
  for (const [k, v] of Object.entries(cost_by_model)) inc[`cost_by_model.${k}`] = v;
  // Settles against the leases in the same update: usage spent from a lease raises the
  // counter and that lease's `spent` alike, so cap - settled - outstanding stays as it was.
  // Any other usage lowers it, so it bumps the version a grant is conditional on (a grant
  // computed before it must not land).
  for (const [id, l] of Object.entries(d.leases ?? {})) {
    inc[`leases.${id}.spent`] = l.cost;
    for (const [k, v] of Object.entries(l.tokens)) inc[`leases.${id}.tokens.${k}.spent`] = v;
  }
  if (d.leases === undefined || d.unleased) inc.version = 1;
  return {
    filter: { _id: d.id, jobs: { $ne: jobId } } satisfies Filter<CounterDoc>,
    update: {
      $inc: inc,
      $push: { jobs: jobId },
      $set: { period_end: d.end },
      $setOnInsert: { product_id: d.productId, user_id: d.userId, period_start: d.start },
    } as UpdateFilter<CounterDoc>,
  };
}

/** Updates in flight at once per call: the database applies them one by one anyway. */
const IN_FLIGHT = 16;

/**
 * One single-document update per item, a few in flight. Not a bulk write: the embedded
 * database runs a multi-statement update command in time that grows far faster than its
 * length (100 updates by `_id` in one command took minutes; sent one by one, a second).
 */
export async function eachConcurrently<T>(items: readonly T[], run: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(IN_FLIGHT, items.length) }, async () => {
      while (next < items.length) await run(items[next++]!);
    }),
  );
}
