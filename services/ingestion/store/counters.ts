import { Double, type Collection, type Db, type Filter, type UpdateFilter } from "mongodb";
import { LRUCache } from "lru-cache";
import pMap from "p-map";
import { GroupCommit } from "@meter/lib/group-commit";
import { findByIds } from "@meter/lib/mongo";
import { own, sumByName } from "@meter/lib/own";
import { guardOf, writeAlone, writeRound, writeStatements, type Addition as RoundAddition, type RoundRequest } from "./rounds.ts";
import { toDollars, toNano } from "@meter/rules";
import { BOUND_STATE_MS, type CounterState } from "../domain/counter-bounds.ts";
import type { CounterDelta } from "../domain/counter-delta.ts";
import { bumpsVersion } from "../domain/lease-settlement.ts";
import type { Totals } from "../domain/totals.ts";
import { decodeKeys } from "../domain/field-keys.ts";

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
   * A period counter that starts where a calendar month starts also holds that month's share:
   * the totals of its events stamped in that month, which the month's own counter then does
   * not get (one update per user instead of two when periods are calendar months). Usage of
   * the month adds the two (monthTotals).
   */
  month?: Totals;
  /**
   * A user's period counter: of its spend, what events whose plan draws credits spent
   * (nano-dollars; absent while there were none, so users without credits store nothing more).
   * Credits pay only for that spend: what the rest spent beyond the allowance, before the user
   * moved to a plan with credits in the same period, is never drawn (credits/allocate.ts needed).
   */
  credited_nano?: number;
  /**
   * A team's period counter also holds the team's windows that lie within its period (calendar
   * windows, `period` windows: teams/count.ts), as a window document holds them
   * (windows/store.ts WindowDoc.w): so a job counts a team with one update of one document.
   * Entries whose `e` has passed go with a later update by the process that wrote them.
   */
  w?: Record<string, { n: number; e: number }>;
  /**
   * Jobs whose events were added, as field names (`jobs.<job id>`): the guard that makes a
   * retried or taken-over job add its events once. A job's entry is removed by the next
   * update of the counter from the process that closed the job (see CounterStore.add).
   */
  jobs: Record<string, 1>;
}

/**
 * Totals as stored: money in `cost_nano` and `cost_nano_by_model`, integers `$inc`ed exactly.
 * Counters written before money was exact hold float dollars in `cost` and `cost_by_model`;
 * nothing adds to those any more, and they are read converted to the unit once and added
 * to the integer fields (readTotals), so such a counter goes on exactly from where it was.
 */
interface StoredTotals extends Omit<Totals, "cost" | "cost_by_model" | "tokens_by_model"> {
  /** Absent until an event names a model (only `$inc`s create it). */
  tokens_by_model?: Record<string, number>;
  cost_nano?: number;
  cost_nano_by_model?: Record<string, number>;
  cost?: number;
  cost_by_model?: Record<string, number>;
}

/** A stored counter's totals with money in nano-dollars (see StoredTotals). */
export function readTotals<T extends StoredTotals>(raw: T): Omit<T, keyof StoredTotals> & Totals {
  const { cost_nano, cost_nano_by_model, cost, cost_by_model, ...rest } = raw;
  // Model names are the caller's ("constructor", "__proto__"): summed by name, own keys only.
  const byModel = cost_by_model === undefined ? { ...cost_nano_by_model } : sumByName(cost_nano_by_model, Object.fromEntries(Object.entries(cost_by_model).map(([k, v]) => [k, toNano(v)])));
  return { ...rest, tokens_by_model: rest.tokens_by_model ?? {}, cost: (cost_nano ?? 0) + toNano(cost ?? 0), cost_by_model: byModel } as unknown as Omit<T, keyof StoredTotals> & Totals;
}

/**
 * A counter's tokens and dollars by model, for answers: decoded, and without a model whose
 * tokens and cost are both 0 (what a late change's move left where the events were counted
 * before: their model's fields go to 0, never away).
 */
export function modelBreakdown(counter: Pick<Totals, "tokens_by_model" | "cost_by_model"> | null | undefined): { tokens: Record<string, number>; dollars: Record<string, number> } {
  const tokens = decodeKeys(counter?.tokens_by_model);
  const cost = decodeKeys(counter?.cost_by_model);
  const used = (k: string) => (own(tokens, k) ?? 0) !== 0 || (own(cost, k) ?? 0) !== 0;
  const keep = (m: Record<string, number>) => Object.fromEntries(Object.entries(m).filter(([k]) => used(k)));
  return { tokens: keep(tokens), dollars: dollarsByModel(keep(cost)) };
}

/** Nano-dollars by model as dollars, for answers and events. */
export function dollarsByModel(m: Record<string, number> | undefined): Record<string, number> {
  return Object.fromEntries(Object.entries(m ?? {}).map(([k, v]) => [k, toDollars(v)]));
}

/** A counter document as read from the collection, before readTotals. */
export type StoredCounterDoc = Omit<CounterDoc, keyof Totals | "month"> & StoredTotals & { month?: StoredTotals };

/** A stored counter with its money (and its month share's) in nano-dollars. */
export function readCounter<T extends StoredCounterDoc>(raw: T): Omit<T, keyof StoredTotals | "month"> & CounterDoc {
  const doc = readTotals(raw) as Omit<T, keyof StoredTotals | "month"> & CounterDoc;
  if (raw.month) doc.month = readTotals(raw.month);
  return doc;
}

/**
 * What a round reads back of the counters a job asks for, after its update: what thresholds
 * (thresholds/crossings.ts) decide by. Only these fields: the rest of a counter (job guards,
 * window entries, the month's share) is never needed there and would cost every read its
 * decoding.
 */
export type CounterAfter = Pick<CounterDoc, "_id" | "cost" | "tokens" | "cost_by_model">;

const AFTER_FIELDS = { cost_nano: 1, cost: 1, cost_nano_by_model: 1, cost_by_model: 1, tokens: 1 } as const;

/**
 * A counter's spend and, of it, what events whose plan drew no credits spent, in nano-dollars:
 * the spend less CounterDoc.credited_nano, within [0, spend] (a move's estimate of how the events
 * it took out were counted may be off).
 */
export interface PeriodSpend {
  spend: number;
  uncredited: number;
}

/** A counter's PeriodSpend from its spend and credited_nano (nano-dollars). */
export function spendOf(spend: number, credited: number | undefined): PeriodSpend {
  return { spend, uncredited: Math.min(spend, Math.max(0, spend - (credited ?? 0))) };
}

/** What a period counter (null: none yet) spent while its plan drew no credits (PeriodSpend.uncredited). */
export function uncreditedOf(counter: CounterDoc | null | undefined): number {
  return counter ? spendOf(counter.cost, counter.credited_nano).uncredited : 0;
}

/**
 * How long a round waits at most for jobs on their way (CounterStore.expect): the batches that
 * arrive together at a busy database reach their counters tens of milliseconds apart.
 */
const GATHER_MS = 50;

/** Counters whose closed jobs' entries this process still has to remove. */
const PENDING_COUNTERS = 100_000;

/** Bound states kept (boundStates): at most this many counters, and this many of their models in all. */
const BOUND_STATES = 50_000;
const BOUND_STATE_MODELS = 200_000;

/** Counters whose window entries (CounterDoc.w) this process wrote and has yet to remove once ended. */
const WINDOWED_COUNTERS = 100_000;

/**
 * Counters as single documents. A job adds its share to each counter with one guarded
 * update, `{_id, "jobs.<job>": {$exists: false}}` + `$inc` + `$set: {"jobs.<job>": 1}`,
 * upserting: a single-document update is atomic on MongoDB and on the embedded database
 * (whose writes run one at a time), so a job's second addition finds its entry and changes
 * nothing (the upsert then collides on `_id`: that duplicate key means "already added").
 *
 * A job's entry may go once the job is closed (deleted): nobody completes it again. Rather
 * than a `$pull` round per counter, the process that closed it `$unset`s the entry in its
 * next update of that counter (`released`): no command of its own. Entries of counters not
 * updated again by that process (a period that ended, a process that restarted, a counter
 * pushed out of the bounded list) stay behind; they are a few dozen bytes each and never
 * match a job again.
 */
export class CounterStore {
  readonly counters: Collection<StoredCounterDoc>;
  private readonly closed = new LRUCache<string, Set<string>>({ max: PENDING_COUNTERS });
  /** The bound states this process read lately (boundStates), by counter; a counter not written yet as one of no tokens and no model. */
  private readonly boundsRead = new LRUCache<string, CounterState>({
    max: BOUND_STATES,
    maxSize: BOUND_STATE_MODELS,
    sizeCalculation: (s) => 1 + s.models.size,
    ttl: BOUND_STATE_MS,
  });
  /** The window entries (CounterDoc.w) this process wrote, by counter: field -> end (epoch ms). */
  private readonly windowEnds = new LRUCache<string, Map<string, number>>({ max: WINDOWED_COUNTERS });
  /** Additions of concurrent jobs, written together (add); a round first waits a moment for the jobs on their way (expect). */
  private readonly rounds = new GroupCommit<AddRequest, Map<string, CounterAfter | null>>(
    (requests) => this.addRound(requests),
    () => this.gather(),
  );
  /** Jobs of this process on their way to add (expect), and the round waiting for them, woken when one arrives or gives up. */
  private readonly coming = new Set<string>();
  private wake: (() => void) | undefined;

  /**
   * `collection` "counters" holds users' counters; teams' are kept apart in "team_counters"
   * (`owner` "team_id"), so that no external user id, whatever its characters, meets a team's key.
   */
  constructor(
    db: Db,
    collection = "counters",
    private readonly owner: "user_id" | "team_id" = "user_id",
  ) {
    this.counters = db.collection<StoredCounterDoc>(collection);
  }

  /**
   * Drops the unique `job_key` index of the snapshot chains this collection held before:
   * documents without that field would all collide on it.
   */
  async init(): Promise<void> {
    await this.counters.dropIndex("job_key_1").catch(() => {});
  }

  async get(id: string): Promise<CounterDoc | null> {
    const raw = await this.counters.findOne({ _id: id });
    return raw && readCounter(raw);
  }

  /** The counters that exist among `ids`, by id: one read by `_id` list. */
  async getMany(ids: readonly string[]): Promise<Map<string, CounterDoc>> {
    return new Map((await findByIds(this.counters, ids)).map((c) => [c._id, readCounter(c)]));
  }

  /** What a round reads back of the counters asked for (CounterAfter): one read by `_id` list of those fields. */
  private async afterOf(ids: readonly string[]): Promise<Map<string, CounterAfter>> {
    const docs = await findByIds(this.counters, ids, { projection: AFTER_FIELDS });
    return new Map(docs.map((d) => [d._id, readTotals(d as StoredTotals & Pick<CounterDoc, "_id">)]));
  }

  /** The spend (nano-dollars) of the counters among `ids`: one read by `_id` list of the money fields only. */
  async spends(ids: readonly string[]): Promise<Map<string, PeriodSpend>> {
    const docs = await findByIds(this.counters, ids, { projection: { cost_nano: 1, cost: 1, credited_nano: 1 } });
    return new Map(docs.map((d) => [d._id, spendOf(readTotals({ cost_nano: d.cost_nano, cost: d.cost } as StoredTotals).cost, d.credited_nano)]));
  }

  /**
   * What the counter bounds (domain/counter-bounds.ts) check events against: the tokens and
   * the models of the counters among `ids`, by id; one read by `_id` list of those two fields.
   * A counter not yet written is absent. Each is kept BOUND_STATE_MS for recentBoundStates().
   */
  async boundStates(ids: readonly string[]): Promise<Map<string, CounterState>> {
    const docs = await findByIds(this.counters, ids, { projection: { tokens: 1, tokens_by_model: 1 } });
    const read = new Map(docs.map((d) => [d._id, { tokens: d.tokens ?? 0, models: new Set(Object.keys(d.tokens_by_model ?? {})) }]));
    for (const id of ids) this.boundsRead.set(id, read.get(id) ?? { tokens: 0, models: new Set() });
    return new Map([...read].map(([id, s]) => [id, copyState(s)]));
  }

  /** Copies of the bound states among `ids` that boundStates() read in the last BOUND_STATE_MS. */
  recentBoundStates(ids: readonly string[]): Map<string, CounterState> {
    const out = new Map<string, CounterState>();
    for (const id of ids) {
      const s = this.boundsRead.get(id);
      if (s) out.set(id, copyState(s));
    }
    return out;
  }

  /**
   * Adds every delta of job `jobId` to its counter, each at most once however often this runs.
   * Returns the counters named in `read` as they are after the addition (or later: what a
   * reader of thresholds needs is every spend reached, lib's reachedThresholds).
   * Window entries (CounterDelta.windows) this process wrote that ended by `now` go with the update.
   *
   * Concurrent jobs share rounds (GroupCommit): a round adds the deltas of every job queued
   * with one statement a counter, in unordered update commands of many statements, then reads
   * the counters named in `read` with one read by `_id` list: a batch's counters cost one
   * update command instead of one command each, and jobs that complete together share a
   * statement a counter (docs/benchmarks.md, "What a team costs a batch").
   */
  add(jobId: string, deltas: readonly CounterDelta[], read: ReadonlySet<string>, now = new Date()): Promise<Map<string, CounterAfter | null>> {
    this.arrived(jobId);
    if (deltas.length === 0) return Promise.resolve(new Map());
    return this.rounds.run({ jobId, deltas, read, now });
  }

  /**
   * Job `jobId` will add soon (its events are being stored): a round about to start waits for it,
   * at most GATHER_MS, so that jobs whose batches arrived together add in one round, a statement
   * a counter, rather than one round each (docs/benchmarks.md, "Ingestion"). `arrived` ends the
   * wait for it, by add or by the job giving up.
   */
  expect(jobId: string): void {
    this.coming.add(jobId);
  }

  /** Job `jobId` added, or will not: a round waits for it no longer. */
  arrived(jobId: string): void {
    if (this.coming.delete(jobId)) this.wake?.();
  }

  private async gather(): Promise<void> {
    const until = performance.now() + GATHER_MS;
    for (let left = GATHER_MS; this.coming.size > 0 && left > 0; left = until - performance.now()) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        this.wake = done;
        function done() {
          clearTimeout(timer);
          resolve();
        }
      });
      this.wake = undefined;
    }
  }

  /** One round of additions (store/rounds.ts), then one read of the counters asked for. */
  private async addRound(requests: readonly AddRequest[]): Promise<Map<string, CounterAfter | null>[]> {
    await writeRound(
      requests,
      async (documents, now) => {
        const ops = documents.map((adds) => ({ adds, releasing: this.releasing(adds), ended: this.ended(adds, now) }));
        await writeStatements(this.counters, ops.map(({ adds, releasing, ended }) => addOp(adds, releasing, ended, this.owner)));
        for (const { adds, releasing, ended } of ops) this.forget(adds, releasing, ended);
      },
      (r, now) => pMap(r.deltas, (d) => this.addOne(r.jobId, d, now), { concurrency: UPDATES_IN_FLIGHT }),
    );
    const wanted = new Set(requests.flatMap((r) => r.deltas.filter((d) => r.read.has(d.id)).map((d) => d.id)));
    const after = wanted.size === 0 ? new Map<string, CounterAfter>() : await this.afterOf([...wanted]);
    return requests.map((r) => new Map(r.deltas.filter((d) => r.read.has(d.id)).map((d) => [d.id, after.get(d.id) ?? null])));
  }

  /** The job is closed: its entries may go with the next update of each counter. */
  released(jobId: string, ids: readonly string[]): void {
    for (const id of ids) {
      const jobs = this.closed.get(id);
      if (jobs) jobs.add(jobId);
      else this.closed.set(id, new Set([jobId]));
    }
  }

  /** Adds one job's delta on its own (after a collision in a round). */
  private async addOne(jobId: string, d: CounterDelta, now: Date): Promise<void> {
    const adds = [{ jobId, d }];
    const releasing = this.releasing(adds);
    const ended = this.ended(adds, now);
    if (await writeAlone(this.counters, d.id, jobId, addOp(adds, releasing, ended, this.owner))) this.forget(adds, releasing, ended);
  }

  /** Closed jobs whose entries the next update of one counter removes (not those the update adds). */
  private releasing(adds: readonly Addition[]): string[] {
    const adding = new Set(adds.map((a) => a.jobId));
    return [...(this.closed.get(adds[0]!.d.id) ?? [])].filter((j) => !adding.has(j));
  }

  /**
   * The window entries of counter `d` this process wrote that ended by `now`: nothing adds to
   * them any more (shares of ended windows are left out), so removing them loses no count.
   * Entries another process wrote (or this one before a restart) stay until the period's
   * counter is no longer written; readers pass them by (their `e` has passed).
   */
  private ended(adds: readonly Addition[], now: Date): string[] {
    const ends = this.windowEnds.get(adds[0]!.d.id);
    if (!ends) return [];
    return [...ends].filter(([k, e]) => e <= now.getTime() && !adds.some(({ d }) => d.windows?.has(k))).map(([k]) => k);
  }

  /** The entries of `released` jobs and the `ended` window entries are gone from one counter; its new window entries are remembered. */
  private forget(adds: readonly Addition[], released: readonly string[], ended: readonly string[]): void {
    const id = adds[0]!.d.id;
    const pending = this.closed.get(id);
    for (const j of released) pending?.delete(j);
    if (pending?.size === 0) this.closed.delete(id);
    const written = adds.flatMap(({ d }) => [...(d.windows ?? [])]);
    if (ended.length === 0 && written.length === 0) return;
    const ends = this.windowEnds.get(id) ?? new Map<string, number>();
    for (const k of ended) ends.delete(k);
    for (const [k, s] of written) ends.set(k, s.end);
    if (ends.size === 0) this.windowEnds.delete(id);
    else this.windowEnds.set(id, ends);
  }
}

/**
 * A sum's increment as a BSON double. The driver sends a whole number that fits 32 bits as an
 * int32, and the embedded database (FerretDB v1) adds two int32s in 32 bits, wrapping past
 * 2^31 (2e9 + 2e9 reads -294967296) where MongoDB widens to int64; nano-dollars pass 2^31 at
 * $2.15. A double holds every whole number up to 2^53 exactly, on either database.
 */
export function wide(n: number): Double {
  return new Double(n);
}

/** A job's additions waiting for their round (CounterStore.add), with the counters it reads after. */
interface AddRequest extends RoundRequest<CounterDelta> {
  read: ReadonlySet<string>;
}

type Addition = RoundAddition<CounterDelta>;

/** The guarded update that adds the deltas of `adds` (one counter, one or several jobs): applied whole, or not at all if any of the jobs is there. */
function addOp(adds: readonly Addition[], releasing: readonly string[], ended: readonly string[], owner: "user_id" | "team_id") {
  const sums: Record<string, number> = {};
  const inc = (field: string, n: number) => {
    sums[field] = (sums[field] ?? 0) + n;
  };
  const put = (prefix: string, t: Totals) => {
    const { tokens_by_model, cost_by_model, cost, ...flat } = t;
    inc(`${prefix}cost_nano`, cost);
    for (const [k, v] of Object.entries(flat)) inc(`${prefix}${k}`, v);
    for (const [k, v] of Object.entries(tokens_by_model)) inc(`${prefix}tokens_by_model.${k}`, v);
    for (const [k, v] of Object.entries(cost_by_model)) inc(`${prefix}cost_nano_by_model.${k}`, v);
  };
  const first = adds[0]!.d;
  const set: Record<string, unknown> = { period_end: first.end };
  let bump = false;
  for (const { jobId, d } of adds) {
    put("", d.add);
    if (d.credited) inc("credited_nano", d.credited);
    if (d.month) put("month.", d.month);
    // Leases settle in the same update (domain/lease-settlement.ts).
    for (const [id, l] of Object.entries(d.leases ?? {})) {
      inc(`leases.${id}.spent`, l.cost);
      for (const [k, v] of Object.entries(l.tokens)) inc(`leases.${id}.tokens.${k}.spent`, v);
    }
    for (const [f, n] of Object.entries(d.windowSettle?.spent ?? {})) inc(f, n);
    bump ||= bumpsVersion(d) || d.windowSettle?.bump === true;
    set[`jobs.${jobId}`] = 1;
    // Window counts in the counter itself (CounterDoc.w), as a window document counts them (windows/store.ts).
    for (const [key, s] of d.windows ?? []) {
      inc(`w.${key}.n`, s.n);
      set[`w.${key}.e`] = wide(s.end);
    }
  }
  if (bump) sums.version = 1;
  const update: UpdateFilter<StoredCounterDoc> = {
    $inc: Object.fromEntries(Object.entries(sums).map(([f, n]) => [f, wide(n)])),
    $set: set,
    $setOnInsert: { product_id: first.productId, [owner]: first.userId, period_start: first.start },
  } as UpdateFilter<StoredCounterDoc>;
  const unset = [...releasing.map((j) => `jobs.${j}`), ...ended.map((k) => `w.${k}`)];
  if (unset.length > 0) update.$unset = Object.fromEntries(unset.map((f) => [f, ""]));
  return { filter: guardOf(adds) as Filter<StoredCounterDoc>, update };
}

/**
 * Updates whose result is read (findOneAndUpdate, one per command) in flight at once, with
 * p-map; the database applies them one by one anyway.
 */
export const UPDATES_IN_FLIGHT = 16;

/** A bound check changes the states it is given (the batch's own additions): it gets copies. */
function copyState(s: CounterState): CounterState {
  return { tokens: s.tokens, models: new Set(s.models) };
}
