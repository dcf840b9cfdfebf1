import type { Collection, Db } from "mongodb";

/**
 * A request's work list, written before its events and deleted once everything derived
 * from them (counters, thresholds, outbox entries) is written. A job left behind by a
 * crash is completed by a later retry or by the recovery sweep. The collection holds only
 * jobs in flight, so scanning it is cheap.
 */
export interface JobDoc {
  _id: string;
  kind: "usage" | "gate";
  product_id: string;
  /** Stored `_id`s of the events the request offered (the ones it inserted carry `job`). */
  ids: string[];
  created_at: Date;
  /**
   * When the job was last claimed: by its request once its insert returned (its set of
   * events is final from then on), or by whoever took it over. Only the claimant completes
   * the job, until the claim is older than the recovery age.
   */
  claimed_at?: Date;
}

/**
 * A job as stored: the offered ids as one JSON string. The embedded database stores a type
 * schema entry for every element of an array, so a job of 1,000 ids as an array cost tens of
 * milliseconds of its single writer to insert and again to claim; as one string, a few.
 */
export type StoredJob = Omit<JobDoc, "ids"> & { ids: string };

export function storedJob(job: JobDoc): StoredJob {
  return { ...job, ids: JSON.stringify(job.ids) };
}

function fromStored(doc: StoredJob): JobDoc {
  return { ...doc, ids: JSON.parse(doc.ids) as string[] };
}

export class JobStore {
  readonly jobs: Collection<StoredJob>;

  constructor(db: Db) {
    this.jobs = db.collection<StoredJob>("jobs");
  }

  async open(job: JobDoc): Promise<void> {
    await this.jobs.insertOne(storedJob(job));
  }

  /** Whether the job is still open (its id only: the document holds every offered id). */
  async isOpen(id: string): Promise<boolean> {
    return (await this.jobs.findOne({ _id: id }, { projection: { _id: 1 } })) !== null;
  }

  /**
   * Claims the job unless someone holds a claim younger than `staleBefore` (the request's
   * own first claim passes `staleBefore` = epoch: only an unclaimed job). Atomic: of two
   * claimants one wins. Returns `job` as claimed, or null.
   */
  async claim(job: JobDoc, now: Date, staleBefore: Date): Promise<JobDoc | null> {
    // An update, not findOneAndUpdate: the caller holds the job already, and the document
    // (every offered id) need not travel back.
    const res = await this.jobs.updateOne(
      { _id: job._id, $or: [{ claimed_at: { $exists: false } }, { claimed_at: { $lt: staleBefore } }] },
      { $set: { claimed_at: now } },
    );
    return res.modifiedCount === 1 ? { ...job, claimed_at: now } : null;
  }

  async close(id: string): Promise<void> {
    await this.jobs.deleteOne({ _id: id });
  }

  /** Ids of every job still open (retention keeps what they may need when taken over). */
  async openIds(): Promise<Set<string>> {
    return new Set((await this.jobs.find({}, { projection: { _id: 1 } }).toArray()).map((j) => j._id));
  }

  /** Jobs in flight of a product (only read when a request meets duplicates). */
  async ofProduct(productId: string, kind: JobDoc["kind"]): Promise<JobDoc[]> {
    return (await this.jobs.find({ product_id: productId, kind }).toArray()).map(fromStored);
  }

  async olderThan(t: Date, limit: number): Promise<JobDoc[]> {
    return (await this.jobs.find({ created_at: { $lt: t } }).limit(limit).toArray()).map(fromStored);
  }
}
