import type { Collection, Db, Filter, UpdateFilter } from "mongodb";
import { LRUCache } from "lru-cache";
import pMap from "p-map";
import { isDuplicateKeyError } from "@meter/lib/mongo";
import { UPDATES_IN_FLIGHT, wide } from "../store/counters.ts";
import type { WindowDelta } from "./shares.ts";
import type { WindowLeaseEntry } from "./slices.ts";

/**
 * One user's window counters (the plan's `limits`): entries keyed by windowField, each the
 * amount counted (`n`: nano-dollars, tokens or requests) and when it stops mattering (`e`,
 * epoch ms). An entry whose `e` has passed is `$unset` by the next update of the document,
 * so a user's document holds at most one entry per calendar dimension (two around a window's
 * end) and one per live bucket of a rolling one (61 at most): bounded whatever the traffic.
 */
export interface WindowDoc {
  _id: string;
  product_id: string;
  user_id: string;
  w: Record<string, { n: number; e: number }>;
  /** The job guard, as on counters (store/counters.ts): `jobs.<job id>` once a job's shares were added. */
  jobs: Record<string, 1>;
  /** Budget leases' window slices by holder (windows/slices.ts), and the version grants are conditional on. */
  leases?: Record<string, WindowLeaseEntry>;
  version?: number;
}

/** Documents whose closed jobs' guard entries this process still has to remove. */
const PENDING_DOCS = 100_000;

/**
 * Window documents, added to exactly once per job with the guarded single-document update the
 * period counters use (CounterStore): `{_id, "jobs.<job>": {$exists: false}}` + `$inc` +
 * `$set: {"jobs.<job>": 1}`, upserting; a repeated addition finds the guard and changes nothing.
 * A closed job's guard goes with the next update of the document by the process that closed it.
 */
export class WindowStore {
  readonly windows: Collection<WindowDoc>;
  private readonly closed = new LRUCache<string, Set<string>>({ max: PENDING_DOCS });

  /** `collection` "windows" holds users' documents; teams' are kept apart in "team_windows" (`owner` "team_id"). */
  constructor(
    db: Db,
    collection = "windows",
    private readonly owner: "user_id" | "team_id" = "user_id",
  ) {
    this.windows = db.collection<WindowDoc>(collection);
  }

  /** The window slices of the named leases in a user's document (what a job's usage may settle against). */
  async leasesOf(id: string, leaseIds: readonly string[]): Promise<Record<string, WindowLeaseEntry>> {
    const projection = Object.fromEntries(leaseIds.map((l) => [`leases.${l}`, 1]));
    const doc = await this.windows.findOne({ _id: id }, { projection });
    return doc?.leases ?? {};
  }

  /** A user's window document, or null when nothing was ever counted in a window. */
  get(id: string): Promise<WindowDoc | null> {
    return this.windows.findOne({ _id: id });
  }

  /** Adds every delta of job `jobId`, each at most once however often this runs; entries ended by `now` go. */
  async add(jobId: string, deltas: readonly WindowDelta[], now: Date): Promise<void> {
    await pMap(deltas, (d) => this.addOne(jobId, d, now), { concurrency: UPDATES_IN_FLIGHT });
  }

  /** The job is closed: its guard entries may go with the next update of each document. */
  released(jobId: string, ids: readonly string[]): void {
    for (const id of ids) {
      const jobs = this.closed.get(id);
      if (jobs) jobs.add(jobId);
      else this.closed.set(id, new Set([jobId]));
    }
  }

  private async addOne(jobId: string, d: WindowDelta, now: Date): Promise<void> {
    const releasing = [...(this.closed.get(d.id) ?? [])].filter((j) => j !== jobId);
    const inc: Record<string, unknown> = {};
    const set: Record<string, unknown> = { [`jobs.${jobId}`]: 1 };
    for (const [key, s] of d.add) {
      inc[`w.${key}.n`] = wide(s.n);
      set[`w.${key}.e`] = wide(s.end);
    }
    // Lease slices settle in the same update that counts (windows/slices.ts); other usage bumps the version.
    for (const [path, n] of Object.entries(d.settle?.spent ?? {})) inc[path] = wide(n);
    if (d.settle ? d.settle.bump : d.unleased || d.byLease !== undefined) inc.version = 1;
    const update = {
      $inc: inc,
      $set: set,
      $setOnInsert: { product_id: d.productId, [this.owner]: d.userId },
      ...(releasing.length > 0 ? { $unset: Object.fromEntries(releasing.map((j) => [`jobs.${j}`, ""])) } : {}),
    } as UpdateFilter<WindowDoc>;
    const filter = { _id: d.id, [`jobs.${jobId}`]: { $exists: false } } as Filter<WindowDoc>;
    let after: WindowDoc | null;
    for (;;) {
      try {
        after = await this.windows.findOneAndUpdate(filter, update, { upsert: true, returnDocument: "after" });
        break;
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
        // Either the job was added already, or a concurrent upsert created the document first:
        // then the guarded update now matches it.
        const doc = await this.windows.findOne({ _id: d.id });
        if (doc?.jobs?.[jobId]) return;
      }
    }
    const pending = this.closed.get(d.id);
    for (const j of releasing) pending?.delete(j);
    if (pending?.size === 0) this.closed.delete(d.id);
    await this.dropEnded(after, now);
  }

  /**
   * Removes the entries of windows that ended and buckets that aged out by `now`. Nothing adds
   * to such an entry any more (shares of ended windows are left out), so removing one never
   * loses a count; it runs once per entry, when the update after its end finds it.
   */
  private async dropEnded(doc: WindowDoc | null, now: Date): Promise<void> {
    const ended = Object.entries(doc?.w ?? {}).filter(([, v]) => Number(v.e) <= now.getTime()).map(([k]) => k);
    if (!doc || ended.length === 0) return;
    await this.windows.updateOne({ _id: doc._id }, { $unset: Object.fromEntries(ended.map((k) => [`w.${k}`, ""])) });
  }
}
