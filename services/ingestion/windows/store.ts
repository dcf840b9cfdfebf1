import type { Collection, Db, Filter, UpdateFilter } from "mongodb";
import { LRUCache } from "lru-cache";
import pMap from "p-map";
import { GroupCommit } from "@meter/lib/group-commit";
import { findByIds } from "@meter/lib/mongo";
import { guardOf, roundTime, writeAlone, writeRound, writeStatements, type Addition, type RoundRequest } from "../store/rounds.ts";
import { UPDATES_IN_FLIGHT, wide } from "../store/counters.ts";
import type { WindowDelta } from "./shares.ts";
import type { WindowLeaseEntry } from "./slices.ts";
import type { WindowDocMove } from "./move.ts";

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
  /** Absent until a share is counted (only `$inc`s create it): a document of lease slices alone, or one moved with only ended entries. */
  w?: Record<string, { n: number; e: number }>;
  /** The job guard, as on counters (store/counters.ts): `jobs.<job id>` once a job's shares were added. */
  jobs: Record<string, 1>;
  /** Budget leases' window slices by holder (windows/slices.ts), and the version grants are conditional on. */
  leases?: Record<string, WindowLeaseEntry>;
  version?: number;
}

/** Documents whose closed jobs' guard entries this process still has to remove. */
const PENDING_DOCS = 100_000;

/** Documents whose entries this process keeps the ends of (a rolling window's document may hold 61). */
const KNOWN_DOCS = 10_000;

/** Documents whose ended entries wait for their own removal (found after a round; see noteEnds). */
const ENDED_DOCS = 10_000;

/**
 * Ended entries a document may hold before they get a statement of their own (noteEnds): a few
 * are removed by the document's next update when this process still knows its ends, and are
 * only passed by when read; a statement each time would double the writes of a process that
 * writes more documents than it knows the ends of.
 */
const ENDED_BEFORE_REMOVAL = 16;

/**
 * Window documents, added to exactly once per job with the guarded single-document update the
 * period counters use (CounterStore): `{_id, "jobs.<job>": {$exists: false}}` + `$inc` +
 * `$set: {"jobs.<job>": 1}`, upserting; a repeated addition finds the guard and changes nothing.
 * A closed job's guard goes with the next update of the document by the process that closed it.
 */
export class WindowStore {
  readonly windows: Collection<WindowDoc>;
  private readonly closed = new LRUCache<string, Set<string>>({ max: PENDING_DOCS });
  /** The entries (field -> end, epoch ms) of documents this process wrote lately, as read after its last round: the next update removes those ended by then. */
  private readonly ends = new LRUCache<string, Map<string, number>>({ max: KNOWN_DOCS });
  /** Entries found ended in documents just written, which their update did not remove: removed by the next round. */
  private readonly ended = new Map<string, string[]>();
  /** Additions of concurrent jobs, written together (add). */
  private readonly rounds = new GroupCommit<WindowAddRequest, void>((requests) => this.addRound(requests));

  /**
   * Users' documents are kept in "counters" beside their period counters (windowDocId), where
   * `move` brings those still in the "windows" collection of earlier versions (windows/move.ts);
   * teams' are kept apart beside theirs in "team_counters" (`owner` "team_id").
   */
  constructor(
    db: Db,
    collection = "counters",
    private readonly owner: "user_id" | "team_id" = "user_id",
    private readonly move?: WindowDocMove,
  ) {
    this.windows = db.collection<WindowDoc>(collection);
  }

  /** The window slices of the named leases in a user's document (what a job's usage may settle against). */
  async leasesOf(id: string, leaseIds: readonly string[]): Promise<Record<string, WindowLeaseEntry>> {
    await this.move?.ensure([id]);
    const projection = Object.fromEntries(leaseIds.map((l) => [`leases.${l}`, 1]));
    const doc = await this.windows.findOne({ _id: id }, { projection });
    return doc?.leases ?? {};
  }

  /** A user's window document, or null when nothing was ever counted in a window. */
  async get(id: string): Promise<WindowDoc | null> {
    await this.move?.ensure([id]);
    return this.windows.findOne({ _id: id });
  }

  /**
   * A user's window document and another document of its collection (the user's period
   * counter, when this store keeps users' documents in "counters"), with one command.
   */
  async getWith<T>(id: string, otherId: string): Promise<{ windows: WindowDoc | null; other: T | null }> {
    await this.move?.ensure([id]);
    const docs = await findByIds(this.windows, [id, otherId]);
    const find = (k: string) => docs.find((d) => d._id === k) ?? null;
    return { windows: find(id), other: find(otherId) as T | null };
  }

  /**
   * Adds every delta of job `jobId`, each at most once however often this runs. Entries found
   * ended by `now` go with the next update of their document. Concurrent jobs share rounds, one
   * statement a document, as counters do (CounterStore.add).
   */
  add(jobId: string, deltas: readonly WindowDelta[], now: Date): Promise<void> {
    if (deltas.length === 0) return Promise.resolve();
    return this.rounds.run({ jobId, deltas, now });
  }

  /** One round of additions (store/rounds.ts), then one read of the documents' entries to find those that ended. */
  private async addRound(requests: readonly WindowAddRequest[]): Promise<void[]> {
    const written = [...new Set(requests.flatMap((r) => r.deltas.map((d) => d.id)))];
    await this.move?.ensure(written);
    await writeRound(
      requests,
      async (documents, now) => {
        const ops = documents.map((adds) => ({ adds, unset: this.unsetWith(adds, now) }));
        await writeStatements(this.windows, ops.map(({ adds, unset }) => addOp(adds, unset, this.owner)));
        for (const { adds, unset } of ops) this.forget(adds[0]!.d.id, unset);
      },
      (r, now) => pMap(r.deltas, (d) => this.addOne(r.jobId, d, now), { concurrency: UPDATES_IN_FLIGHT }),
    );
    await this.removeEnded(new Set(written));
    await this.noteEnds(written, roundTime(requests));
    return requests.map(() => undefined);
  }

  /**
   * Removes the entries found ended after an earlier round (noteEnds) from documents this
   * round did not write (a written one's update removed them, its ends being known): one
   * command. Without it a document whose ends this process had forgotten by its next update
   * (more than KNOWN_DOCS documents written between) kept every ended entry: a minute limit's
   * document grew by an entry a minute of use, for good.
   */
  private async removeEnded(written: ReadonlySet<string>): Promise<void> {
    const ops = [];
    for (const [id, fields] of this.ended) {
      if (!written.has(id)) ops.push({ updateOne: { filter: { _id: id } as Filter<WindowDoc>, update: { $unset: Object.fromEntries(fields.map((k) => [`w.${k}`, ""])) } as UpdateFilter<WindowDoc> } });
    }
    this.ended.clear();
    if (ops.length > 0) await this.windows.bulkWrite(ops, { ordered: false });
  }

  /** Adds one job's delta on its own (after a collision in a round). */
  private async addOne(jobId: string, d: WindowDelta, now: Date): Promise<void> {
    const adds = [{ jobId, d }];
    const unset = this.unsetWith(adds, now);
    if (await writeAlone(this.windows, d.id, jobId, addOp(adds, unset, this.owner))) this.forget(d.id, unset);
  }

  /**
   * What the update of a document removes: closed jobs' guards, and the entries of windows that
   * ended and buckets that aged out by `now` among those last read (not those the update adds
   * to). Nothing adds to such an entry any more (shares of ended windows are left out), so
   * removing one never loses a count.
   */
  private unsetWith(adds: readonly WindowAddition[], now: Date): { jobs: string[]; entries: string[] } {
    const id = adds[0]!.d.id;
    const adding = new Set(adds.map((a) => a.jobId));
    const counting = new Set(adds.flatMap((a) => [...a.d.add.keys()]));
    return {
      jobs: [...(this.closed.get(id) ?? [])].filter((j) => !adding.has(j)),
      entries: [...(this.ends.get(id) ?? [])].filter(([k, e]) => e <= now.getTime() && !counting.has(k)).map(([k]) => k),
    };
  }

  private forget(id: string, unset: { jobs: string[]; entries: string[] }): void {
    const pending = this.closed.get(id);
    for (const j of unset.jobs) pending?.delete(j);
    if (pending?.size === 0) this.closed.delete(id);
    const ends = this.ends.get(id);
    for (const k of unset.entries) ends?.delete(k);
  }

  /**
   * Reads the entries of the documents just written (one read by `_id` list): also those other
   * processes wrote, so that whoever writes a document next removes what ended in it. A
   * document not written again keeps its entries, which readers pass by once ended.
   */
  private async noteEnds(ids: readonly string[], now: Date): Promise<void> {
    const docs = await findByIds(this.windows, ids, { projection: { w: 1 } });
    for (const doc of docs) {
      const ends = new Map(Object.entries(doc.w ?? {}).map(([k, v]) => [k, Number(v.e)]));
      this.ends.set(doc._id, ends);
      // Ended already and still there: its update did not know them (removed by the next round once they are many).
      const ended = [...ends].filter(([, e]) => e <= now.getTime()).map(([k]) => k);
      if (ended.length >= ENDED_BEFORE_REMOVAL && this.ended.size < ENDED_DOCS) this.ended.set(doc._id, ended);
    }
  }

  /** The job is closed: its guard entries may go with the next update of each document. */
  released(jobId: string, ids: readonly string[]): void {
    for (const id of ids) {
      const jobs = this.closed.get(id);
      if (jobs) jobs.add(jobId);
      else this.closed.set(id, new Set([jobId]));
    }
  }
}

type WindowAddition = Addition<WindowDelta>;
type WindowAddRequest = RoundRequest<WindowDelta>;

/** The guarded update that adds the deltas of `adds` (one document, one or several jobs): applied whole, or not at all if any of the jobs is there. */
function addOp(adds: readonly WindowAddition[], unset: { jobs: string[]; entries: string[] }, owner: "user_id" | "team_id") {
  const sums: Record<string, number> = {};
  const inc = (field: string, n: number) => {
    sums[field] = (sums[field] ?? 0) + n;
  };
  const first = adds[0]!.d;
  const set: Record<string, unknown> = {};
  let bump = false;
  for (const { jobId, d } of adds) {
    set[`jobs.${jobId}`] = 1;
    for (const [key, s] of d.add) {
      inc(`w.${key}.n`, s.n);
      set[`w.${key}.e`] = wide(s.end);
    }
    // Lease slices settle in the same update that counts (windows/slices.ts); other usage bumps the version.
    for (const [path, n] of Object.entries(d.settle?.spent ?? {})) inc(path, n);
    bump ||= d.settle ? d.settle.bump : d.unleased === true || d.byLease !== undefined;
  }
  if (bump) sums.version = 1;
  const removed = [...unset.jobs.map((j) => `jobs.${j}`), ...unset.entries.map((k) => `w.${k}`)];
  const update = {
    $inc: Object.fromEntries(Object.entries(sums).map(([f, n]) => [f, wide(n)])),
    $set: set,
    $setOnInsert: { product_id: first.productId, [owner]: first.userId },
    ...(removed.length > 0 ? { $unset: Object.fromEntries(removed.map((f) => [f, ""])) } : {}),
  } as UpdateFilter<WindowDoc>;
  return { filter: guardOf(adds) as Filter<WindowDoc>, update };
}
