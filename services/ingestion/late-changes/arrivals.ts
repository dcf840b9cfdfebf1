import type { Collection, Db } from "mongodb";
import { deleteInRounds, findByIds, insertIgnoringDuplicates, upsertRetrying } from "@meter/lib/mongo";
import type { UsageEventDoc } from "../store/usage-events.ts";

/**
 * The events of one job in one period counter (or of one move into a counter), kept for the
 * late-change window so that a subscription recorded late can find and move them without a
 * scan (move.ts). `_id` is "<job>|<counter id>", or "<job>|team:<team counter id>" for the
 * members' events a team's period counter counted.
 */
export interface ArrivalList {
  _id: string;
  /** The events' ids without the product prefix, as one JSON string (an array costs the embedded database a type entry per element). */
  ids: string;
  /** Latest timestamp among them (ms): a list older than a change's start has nothing to move. */
  latest: number;
  at: Date;
}

/** Which jobs recorded lists in one product and one 10-second bucket: `_id` "<product>|<bucket ms>". */
interface ArrivalBucket {
  _id: string;
  jobs: Record<string, 1>;
  at: Date;
}

const BUCKET_MS = 10_000;
const FORGET_EVERY_MS = 5_000;

/** `counterId` is a list key: a user's period counter id, or a team's as teamListKey marks it. */
export function listId(jobId: string, counterId: string): string {
  return `${jobId}|${counterId}`;
}

/** The list key of a team's period counter (`team_counters`): apart from users' counter ids, which start with the product id. */
export function teamListKey(teamCounterId: string): string {
  return `team:${teamCounterId}`;
}

/** Most events of one job in one counter kept findable by a late change (more: a backfill). */
export const MAX_LISTED = 1_000;

/** A counter's events as a late change finds them. */
export function arrivalList(counterId: string, events: readonly UsageEventDoc[]) {
  let latest = 0;
  for (const e of events) latest = Math.max(latest, e.timestamp.getTime());
  return { counterId, ids: events.map((e) => e._id.slice(e.product_id.length + 1)), latest };
}

/**
 * Recent arrivals: per job, the ids of its events in each period counter, and per product and
 * 10 seconds, the jobs that wrote some. A job writes them with one insert and one update; the
 * writing process deletes them once the window has passed (by `_id`), and the daily retention
 * pass deletes what a restarted process left.
 */
export class ArrivalStore {
  private readonly lists: Collection<ArrivalList>;
  private readonly buckets: Collection<ArrivalBucket>;
  /** What this process wrote, oldest first, to delete once the window has passed. */
  private readonly written: { at: number; lists: string[]; bucket: string }[] = [];
  private forgotAt = 0;

  constructor(
    db: Db,
    private readonly windowMs: number,
  ) {
    this.lists = db.collection<ArrivalList>("arrival_lists");
    this.buckets = db.collection<ArrivalBucket>("arrival_buckets");
  }

  /** Records a job's lists (idempotent: a repeated job writes nothing twice). */
  async record(productId: string, jobId: string, lists: { counterId: string; ids: string[]; latest: number }[], now: Date): Promise<void> {
    if (this.windowMs <= 0 || lists.length === 0) return;
    const docs = lists.map((l) => ({ _id: listId(jobId, l.counterId), ids: JSON.stringify(l.ids), latest: l.latest, at: now }));
    await insertIgnoringDuplicates(this.lists, docs);
    const bucket = Math.floor(now.getTime() / BUCKET_MS) * BUCKET_MS;
    const id = `${productId}|${bucket}`;
    await upsertRetrying(() => this.buckets.updateOne({ _id: id }, { $set: { [`jobs.${jobId}`]: 1 }, $setOnInsert: { at: new Date(bucket) } }, { upsert: true }));
    this.written.push({ at: now.getTime(), lists: docs.map((d) => d._id), bucket: id });
    // The process that wrote them deletes them, a few seconds' worth at a time.
    if (now.getTime() - this.forgotAt >= FORGET_EVERY_MS) {
      this.forgotAt = now.getTime();
      await this.forgetOld(now);
    }
  }

  /** Jobs that recorded lists in `productId` from `from` on (within the window: older ones are gone). */
  async jobsSince(productId: string, from: Date, now: Date): Promise<string[]> {
    const first = Math.max(from.getTime(), now.getTime() - this.windowMs - BUCKET_MS);
    const ids: string[] = [];
    for (let b = Math.floor(first / BUCKET_MS) * BUCKET_MS; b <= now.getTime(); b += BUCKET_MS) ids.push(`${productId}|${b}`);
    const docs = await this.buckets.find({ _id: { $in: ids } }).toArray();
    return docs.flatMap((d) => Object.keys(d.jobs));
  }

  /** Lists by `_id` (absent ones are left out). */
  async get(ids: readonly string[]): Promise<{ _id: string; ids: string[]; latest: number }[]> {
    return (await findByIds(this.lists, ids)).map((d) => ({ _id: d._id, ids: JSON.parse(d.ids) as string[], latest: d.latest }));
  }

  /**
   * Replaces list `id` by `remaining` if it still holds `ids` (what a move read), guarding the
   * step that takes moved events out of the list's counter. False when another did it first.
   */
  async replace(id: string, ids: readonly string[], remaining: readonly string[]): Promise<boolean> {
    const res = await this.lists.updateOne({ _id: id, ids: JSON.stringify(ids) }, { $set: { ids: JSON.stringify(remaining) } });
    return res.modifiedCount === 1;
  }

  /** Deletes what this process wrote more than the window ago (by `_id`, a few thousand per command). */
  private async forgetOld(now: Date): Promise<void> {
    const cut = now.getTime() - this.windowMs - BUCKET_MS;
    const due = () => this.written.length > 0 && this.written[0]!.at < cut;
    while (due()) {
      const lists: string[] = [];
      const buckets = new Set<string>();
      while (due() && lists.length < IDS_PER_DELETE) {
        const w = this.written.shift()!;
        lists.push(...w.lists);
        buckets.add(w.bucket);
      }
      await this.lists.deleteMany({ _id: { $in: lists } });
      await this.buckets.deleteMany({ _id: { $in: [...buckets] }, at: { $lt: new Date(cut) } });
    }
  }

  /** Retention: what a restarted process left behind (a scan; daily). */
  async deleteBefore(t: Date): Promise<number> {
    return (await deleteInRounds(this.lists, { at: { $lt: t } })) + (await deleteInRounds(this.buckets, { at: { $lt: t } }));
  }
}

/** Lists deleted per command (by `_id`, through the embedded database's index). */
const IDS_PER_DELETE = 5_000;
