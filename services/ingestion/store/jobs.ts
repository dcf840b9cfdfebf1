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
  /** Set once the request's own insert returned: from then on its set of events is final. */
  inserted?: true;
}

export class JobStore {
  readonly jobs: Collection<JobDoc>;

  constructor(db: Db) {
    this.jobs = db.collection<JobDoc>("jobs");
  }

  async open(doc: JobDoc): Promise<void> {
    await this.jobs.insertOne(doc);
  }

  async get(id: string): Promise<JobDoc | null> {
    return this.jobs.findOne({ _id: id });
  }

  async markInserted(id: string): Promise<void> {
    await this.jobs.updateOne({ _id: id }, { $set: { inserted: true } });
  }

  async close(id: string): Promise<void> {
    await this.jobs.deleteOne({ _id: id });
  }

  /** Ids of every job still open (retention keeps what they may need when taken over). */
  async openIds(): Promise<Set<string>> {
    return new Set((await this.jobs.find({}, { projection: { _id: 1 } }).toArray()).map((j) => j._id));
  }

  async olderThan(t: Date, limit: number): Promise<JobDoc[]> {
    return this.jobs.find({ created_at: { $lt: t } }).limit(limit).toArray();
  }
}
