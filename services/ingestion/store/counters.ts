import type { Collection, Db } from "mongodb";
import { LRUCache } from "lru-cache";
import { isDuplicateKeyError } from "@meter/lib/mongo";
import { encodeKey } from "../domain/field-keys.ts";
import { insertIgnoringDuplicates, type UsageEventDoc } from "./usage-events.ts";

/**
 * Running totals of one user in one billing period, or in one calendar month (what usage of
 * `current_month` and `YYYY-MM` reads). A counter is a chain of immutable snapshots: snapshot
 * n+1 = snapshot n + the events one job (one request) inserted. Model names in the maps are
 * field-key encoded (see domain/field-keys.ts). Every event enters its period's counter and
 * its month's.
 */
export interface CounterDoc {
  /** "<counter id>#<seq>": inserting it is the compare-and-set that orders writers. */
  _id: string;
  counter_id: string;
  seq: number;
  /** "<job id>|<counter id>", unique: a job's events enter a counter at most once. */
  job_key: string;
  product_id: string;
  user_id: string;
  period_start: Date;
  period_end: Date;
  cost: number;
  tokens: number;
  tool_calls: number;
  events: number;
  tokens_by_model: Record<string, number>;
  cost_by_model: Record<string, number>;
  plan_name: string | null;
  spend_limit: number | null;
  created_at: Date;
}

/** "<product>|<period start>|<period end>|<user>" (user last, so any id is safe). */
export function counterId(productId: string, userId: string, start: Date, end: Date): string {
  return `${productId}|${start.toISOString()}|${end.toISOString()}|${userId}`;
}

/** "<product>|month|<YYYY-MM>|<user>": apart from period counters even when a period is a calendar month. */
export function monthCounterId(productId: string, userId: string, monthStart: Date): string {
  return `${productId}|month|${monthStart.toISOString().slice(0, 7)}|${userId}`;
}

export type Countable = Pick<
  UsageEventDoc,
  "product_id" | "user_id" | "period_start" | "period_end" | "plan_name" | "spend_limit" | "model" | "total_tokens" | "cost_total" | "tool_call_count"
>;

/** The head hint is refreshed every this many snapshots; a read probes at most this far. */
const HINT_EVERY = 8;

/**
 * A process forgets the snapshots it saw after this long. Retention deletes a superseded
 * snapshot only long after that (COMPACT_AFTER_MS), so no writer still builds on the one
 * before it: a writer holding snapshot n would otherwise insert n+1 into the hole left by a
 * deleted n+1 and fork the chain.
 */
const KNOWN_TTL_MS = 60 * 60_000;

/** Superseded snapshots younger than this are kept (24 times KNOWN_TTL_MS; clock skew too). */
export const COMPACT_AFTER_MS = 24 * KNOWN_TTL_MS;

/** A read whose hint points at a deleted snapshot probes forward at most this far. */
const MAX_SKIP = 100_000;

function next(prev: CounterDoc | null, id: string, jobId: string, events: Countable[]): CounterDoc {
  const first = events[0]!;
  const seq = (prev?.seq ?? 0) + 1;
  const doc: CounterDoc = {
    _id: `${id}#${seq}`,
    counter_id: id,
    seq,
    job_key: `${jobId}|${id}`,
    product_id: first.product_id,
    user_id: first.user_id,
    period_start: first.period_start,
    period_end: first.period_end,
    cost: prev?.cost ?? 0,
    tokens: prev?.tokens ?? 0,
    tool_calls: prev?.tool_calls ?? 0,
    events: prev?.events ?? 0,
    tokens_by_model: { ...prev?.tokens_by_model },
    cost_by_model: { ...prev?.cost_by_model },
    plan_name: first.plan_name,
    spend_limit: first.spend_limit,
    created_at: new Date(),
  };
  for (const e of events) {
    doc.cost += e.cost_total;
    doc.tokens += e.total_tokens;
    doc.tool_calls += e.tool_call_count;
    doc.events += 1;
    if (e.model !== null) {
      const key = encodeKey(e.model);
      doc.tokens_by_model[key] = (doc.tokens_by_model[key] ?? 0) + e.total_tokens;
      doc.cost_by_model[key] = (doc.cost_by_model[key] ?? 0) + e.cost_total;
    }
  }
  return doc;
}

/**
 * Adds the events of a job to a counter exactly once, using only inserts under unique keys
 * (atomic on MongoDB and FerretDB alike; no transactions and no read-modify-write, which
 * FerretDB v1 does not isolate). Snapshot n+1 is inserted on top of the latest snapshot n:
 * its `_id` makes two writers racing for n+1 fail but one, and its unique `job_key` makes a
 * job that was already added (by its request before a crash, or by a concurrent recovery)
 * fail too. Reads touch documents by primary key only: a head hint, then a probe forward.
 */
export class Ledger {
  readonly snapshots: Collection<CounterDoc>;
  /** Last known seq per counter; only a hint (it may lag), the probe finds the true head. */
  private readonly heads: Collection<{ _id: string; seq: number }>;
  /** This process's writers of one counter take turns (spares conflicts; not needed for correctness). */
  private readonly queues = new Map<string, Promise<unknown>>();
  /**
   * The latest snapshot this process saw of each counter. Snapshots are immutable, so a
   * stale entry only makes the next insert collide and fall back to reading the chain.
   */
  private readonly known = new LRUCache<string, CounterDoc>({ max: 50_000, ttl: KNOWN_TTL_MS });

  constructor(db: Db) {
    this.snapshots = db.collection<CounterDoc>("counters");
    this.heads = db.collection("counter_heads");
  }

  async init(): Promise<void> {
    await this.snapshots.createIndex({ job_key: 1 }, { unique: true });
  }

  /** The counter's current totals (latest snapshot), or null when nothing was counted. */
  async get(id: string): Promise<CounterDoc | null> {
    const hint = await this.heads.findOne({ _id: id });
    let seq = hint?.seq ?? 0;
    let head: CounterDoc | null = seq > 0 ? await this.snapshots.findOne({ _id: `${id}#${seq}` }) : null;
    if (seq > 0 && !head) {
      // Compaction raised the hint before deleting the snapshot it pointed at, but this read
      // (or a hint update that lost a race on the embedded database) saw the old one. The
      // chain goes on above it: a snapshot is deleted only once a newer one exists.
      for (let skipped = 0; !head; skipped++) {
        if (skipped > MAX_SKIP) throw new Error(`counter ${id}: no snapshot above hint ${hint?.seq}`);
        head = await this.snapshots.findOne({ _id: `${id}#${++seq}` });
      }
      await this.hint(head);
    }
    for (;;) {
      const more = await this.snapshots.findOne({ _id: `${id}#${seq + 1}` });
      if (!more) return head;
      head = more;
      seq++;
    }
  }

  /**
   * Adds each group of a job's events to its counter: one insertMany of the next snapshots
   * built on the snapshots this process knows, then the careful path for any that collided.
   */
  async addAll(jobId: string, groups: Map<string, Countable[]>): Promise<Map<string, CounterDoc | null>> {
    const out = new Map<string, CounterDoc | null>();
    const docs: CounterDoc[] = [];
    for (const [id, events] of groups) {
      if (events.length === 0 || this.queues.has(id)) continue;
      const prev = this.known.get(id) ?? (await this.get(id));
      docs.push(next(prev, id, jobId, events));
    }
    const inserted = await insertIgnoringDuplicates(this.snapshots, docs);
    await Promise.all(
      docs.filter((d) => inserted.has(d._id)).map(async (d) => {
        this.known.set(d.counter_id, d);
        out.set(d.counter_id, d);
        if (d.seq % HINT_EVERY === 0) await this.hint(d);
      }),
    );
    await Promise.all(
      [...groups].filter(([id]) => !out.has(id)).map(async ([id, events]) => out.set(id, (await this.add(id, jobId, events)).after)),
    );
    return out;
  }

  /**
   * Deletes the snapshots superseded before `before` (retention, once a day: scans the
   * snapshots older than that). Kept: each counter's latest snapshot, which holds its totals,
   * and every snapshot of a job still open, whose job_key is what refuses that job's second
   * addition when it is taken over. A snapshot goes only once a newer one exists, and the
   * head hint is raised to that one first, so a read still finds the head by primary key.
   * One lookup per counter, then a delete by primary key per snapshot.
   */
  async compact(before: Date, openJobs: Set<string>): Promise<number> {
    const old: Pick<CounterDoc, "_id" | "counter_id" | "seq" | "job_key">[] = await this.snapshots
      .find({ created_at: { $lt: before } }, { projection: { _id: 1, counter_id: 1, seq: 1, job_key: 1 } })
      .toArray();
    const byCounter = new Map<string, typeof old>();
    for (const s of old) {
      const list = byCounter.get(s.counter_id);
      if (list) list.push(s);
      else byCounter.set(s.counter_id, [s]);
    }
    let deleted = 0;
    for (const [id, snaps] of byCounter) {
      // A loop, not Math.max(...): a busy counter can have more snapshots than call arguments fit.
      const top = snaps.reduce((m, s) => Math.max(m, s.seq), 0);
      // Every old snapshot below the newest old one is superseded; that one needs a lookup.
      const topSuperseded = (await this.snapshots.findOne({ _id: `${id}#${top + 1}` }, { projection: { _id: 1 } })) !== null;
      const kept = topSuperseded ? top + 1 : top;
      const doomed = snaps.filter((s) => s.seq < kept && !openJobs.has(s.job_key.slice(0, s.job_key.length - id.length - 1)));
      if (doomed.length === 0) continue;
      await this.hint({ counter_id: id, seq: kept });
      for (const s of doomed) deleted += (await this.snapshots.deleteOne({ _id: s._id })).deletedCount;
    }
    return deleted;
  }

  private async hint(doc: Pick<CounterDoc, "counter_id" | "seq">): Promise<void> {
    await this.heads.updateOne({ _id: doc.counter_id }, { $max: { seq: doc.seq } }, { upsert: true }).catch(() => {});
  }

  /**
   * Adds `events` (all inserted by job `jobId`, all of counter `id`) unless that job was
   * already added. Returns the snapshot before and after (before is null when unknown).
   */
  async add(id: string, jobId: string, events: Countable[]): Promise<{ before: CounterDoc | null; after: CounterDoc | null; added: boolean }> {
    const previous = this.queues.get(id) ?? Promise.resolve();
    const mine = previous.catch(() => {}).then(() => this.addNow(id, jobId, events));
    this.queues.set(id, mine);
    try {
      return await mine;
    } finally {
      if (this.queues.get(id) === mine) this.queues.delete(id);
    }
  }

  private async addNow(id: string, jobId: string, events: Countable[]) {
    if (events.length === 0) return { before: null, after: await this.get(id), added: false };
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, Math.random() * Math.min(100, 5 * attempt)));
      const cached = attempt === 0 ? this.known.get(id) : undefined;
      const before = cached ?? (await this.get(id));
      const doc = next(before, id, jobId, events);
      try {
        await this.snapshots.insertOne(doc);
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
        const taken = await this.snapshots.findOne({ _id: doc._id });
        if (taken && taken.job_key !== doc.job_key) continue; // another job took seq n+1
        // Either that seq holds this job, or job_key collided: the job was added before.
        const after = await this.get(id);
        if (after) this.known.set(id, after);
        return { before: null, after, added: false };
      }
      this.known.set(id, doc);
      if (doc.seq % HINT_EVERY === 0 || attempt > 0) await this.hint(doc);
      return { before, after: doc, added: true };
    }
  }
}
