import type { Binary } from "mongodb";
import { DbStore } from "@meter/lib/mongo";
import { deflateText, inflateText } from "./deflated.ts";

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
  /**
   * Not stored: the live claim this process's claim took over (JobStore.claim), whose claimant,
   * silent for the recovery age, may still be writing.
   */
  taken_from?: Date;
  /** Completions of this job taken over by the sweep that failed. */
  recovery_failures?: number;
  /**
   * Set once the sweep failed to complete the job `MAX_RECOVERY_FAILURES` times: the sweep
   * passes it by from then on (a retry covering it still tries), so one job that cannot be
   * completed never holds up the others. Counted and logged for an operator.
   */
  quarantined_at?: Date;
}

/**
 * A job as stored: the offered ids as their JSON text, raw-deflated (`deflated_ids`). The
 * embedded database stores a type schema entry for every element of an array, so a job of
 * 1,000 ids as an array cost tens of milliseconds of its single writer to insert and again to
 * claim; as one string, a few, for 76 kB that the insert, the claim (a whole-document rewrite
 * there), the delete and every scan of the recovery sweep still carry. Deflated (the product
 * prefix every id repeats goes), 22 kB. Jobs written before keep their text (`ids`).
 */
export type StoredJob = Omit<JobDoc, "ids"> & { ids?: string; deflated_ids?: Binary };

/** A job as the collection keeps it (deflating 1,000 ids takes 0.6 ms, off the event loop). */
export async function storedJob(job: JobDoc): Promise<StoredJob> {
  const { ids, ...rest } = job;
  return { ...rest, deflated_ids: await deflateText(JSON.stringify(ids)) };
}

function fromStored(doc: StoredJob): JobDoc {
  const { deflated_ids, ids, ...rest } = doc;
  const text = deflated_ids ? inflateText(deflated_ids) : (ids ?? "[]");
  return { ...rest, ids: JSON.parse(text) as string[] };
}

export class JobStore extends DbStore {
  readonly jobs = this.db.collection<StoredJob>("jobs");

  async open(job: JobDoc): Promise<void> {
    await this.jobs.insertOne(await storedJob(job));
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
    if (res.modifiedCount !== 1) return null;
    // A claim at the epoch (given up after a failure) or at 1 ms (given back by the sweep) has no claimant behind it.
    const live = job.claimed_at !== undefined && job.claimed_at.getTime() > 1;
    return { ...job, claimed_at: now, ...(live && { taken_from: job.claimed_at }) };
  }

  /**
   * Gives up a claim after a completion failed: the claim goes back to the epoch, so a retry
   * covering the job (or the sweep) takes it at once rather than after the recovery age,
   * and nobody answers its events as duplicates while they are still uncounted.
   */
  async unclaim(job: JobDoc): Promise<void> {
    if (!job.claimed_at) return;
    await this.jobs.updateOne({ _id: job._id, claimed_at: job.claimed_at }, { $set: { claimed_at: new Date(0) } });
  }

  /** Counts a failed completion by the sweep; true when it quarantined the job (at `max`). */
  async failed(id: string, max: number, now: Date): Promise<boolean> {
    // No projection: the embedded database does not take one in findAndModify.
    const doc = await this.jobs.findOneAndUpdate({ _id: id }, { $inc: { recovery_failures: 1 } }, { returnDocument: "after" });
    if ((doc?.recovery_failures ?? 0) < max) return false;
    const res = await this.jobs.updateOne({ _id: id, quarantined_at: { $exists: false } }, { $set: { quarantined_at: now } });
    return res.modifiedCount === 1;
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

  /** Jobs created before `t` and not quarantined, oldest first: the sweep's work list. */
  async olderThan(t: Date, limit: number): Promise<JobDoc[]> {
    const found = await this.jobs.find({ created_at: { $lt: t }, quarantined_at: { $exists: false } }).sort({ created_at: 1, _id: 1 }).limit(limit).toArray();
    return found.map(fromStored);
  }
}
