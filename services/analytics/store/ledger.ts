import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { Collection, Db } from "mongodb";
import pMap from "p-map";
import { deleteInRounds, isDuplicateKeyError } from "@meter/lib/mongo";
import { KeyHashes } from "../domain/key-hashes.ts";
import { DayAccumulator, type GateEntry, type UsageEntry } from "../domain/rollup.ts";
import type { Bucket } from "./dirty.ts";

/**
 * The ledger: every fact analytics has been given. It is append-only: each call stores, per
 * product and UTC hour it touches, one immutable segment holding that call's facts, numbered
 * `<product_id>|<YYYY-MM-DDTHH>|<n>` from 1 without gaps. Nothing is ever rewritten, so
 * storing costs the same however much the ledger holds (the embedded database rewrites a
 * whole document on any update, which made growing documents slower with every fact), and a
 * day reads back by primary key only: each hour's segments 1, 2, ... until one is missing.
 *
 * Exactly once: a segment's `digest` (of its facts' keys) is unique, so a call replayed as
 * it was sent stores nothing. An event that arrives again in a different grouping is stored
 * twice; a day is computed with each event key counted once (see `foldDay`), so it still
 * counts once.
 */
export interface LedgerSegmentDoc {
  _id: string;
  product_id: string;
  day: string;
  /** sha256 of the segment's product, hour and sorted fact keys; unique. */
  digest: string;
  /**
   * JSON of `[key, entry][]`. One string rather than nested documents: the embedded database
   * decodes one string many times faster than the same data as nested values.
   */
  u: string;
  g: string;
}

export interface LedgerFact {
  productId: string;
  eventId: string;
  timestamp: Date;
  kind: "u" | "g";
  entry: UsageEntry | GateEntry;
}

const segmentId = (hourId: string, n: number) => `${hourId}|${n}`;
const hourIdOf = (productId: string, hour: string) => `${productId}|${hour}`;

export class LedgerStore {
  private readonly segments: Collection<LedgerSegmentDoc>;
  /**
   * The highest segment number this process saw per product-hour: where appending starts.
   * Only a hint (another writer may be ahead; the insert then collides and probes on), so
   * old hours can be forgotten.
   */
  private readonly heads = new LRUCache<string, number>({ max: 10_000 });

  /**
   * `ledger_segments`, a segment per product-hour (the bounded window), or with `grain`
   * "day", `late_segments`, a segment per product-day: facts for days before the window
   * (README, "Late facts"). A backfill spreads its facts thin over many hours: one document
   * per day it touches, not per hour, keeps its writes few.
   */
  constructor(db: Db, collection = "ledger_segments", private readonly grain: "hour" | "day" = "hour") {
    this.segments = db.collection<LedgerSegmentDoc>(collection);
  }

  async init(): Promise<void> {
    await this.segments.createIndex({ digest: 1 }, { unique: true });
    // For the retention job on MongoDB; the embedded database scans whatever the index.
    await this.segments.createIndex({ day: 1 });
  }

  /**
   * Stores the facts, one segment per product-hour. `recorded` counts the facts of segments
   * stored now, `duplicates` those of segments stored before (a replayed call).
   */
  async write(facts: readonly LedgerFact[]): Promise<{ recorded: number; duplicates: number }> {
    const byHour = new Map<string, { productId: string; day: string; facts: Map<string, LedgerFact> }>();
    for (const f of facts) {
      const hour = f.timestamp.toISOString().slice(0, this.grain === "hour" ? 13 : 10);
      const id = hourIdOf(f.productId, hour);
      let h = byHour.get(id);
      if (!h) byHour.set(id, (h = { productId: f.productId, day: hour.slice(0, 10), facts: new Map() }));
      const key = `${f.kind}:${f.eventId}`;
      if (!h.facts.has(key)) h.facts.set(key, f); // the first of a repeated id wins, as in ingestion
    }
    let recorded = 0;
    await pMap(byHour, async ([hourId, h]) => {
      const keys = [...h.facts.keys()].sort();
      const entries = (kind: "u" | "g") =>
        JSON.stringify([...h.facts.values()].filter((f) => f.kind === kind).map((f) => [f.eventId, f.entry]));
      const doc = {
        product_id: h.productId,
        day: h.day,
        digest: createHash("sha256").update(hourId).update("\n").update(keys.join("\n")).digest("hex"),
        u: entries("u"),
        g: entries("g"),
      };
      if (await this.append(hourId, doc)) recorded += h.facts.size;
    }, { concurrency: 8 });
    return { recorded, duplicates: facts.length - recorded };
  }

  /** Inserts the segment after the last one of its hour; false when its digest is stored already. */
  private async append(hourId: string, doc: Omit<LedgerSegmentDoc, "_id">): Promise<boolean> {
    let n = (this.heads.get(hourId) ?? (await this.lastOf(hourId))) + 1;
    for (;;) {
      try {
        await this.segments.insertOne({ _id: segmentId(hourId, n), ...doc });
        this.heads.set(hourId, Math.max(n, this.heads.get(hourId) ?? 0));
        return true;
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
      }
      // Either another writer took number n (move on) or this digest is stored (a replay).
      const taken = await this.segments.findOne({ _id: segmentId(hourId, n) }, { projection: { digest: 1 } });
      if (!taken) return false;
      if (taken.digest === doc.digest) return false;
      n = (await this.lastOf(hourId, n)) + 1;
    }
  }

  /**
   * The last segment number of an hour (0 when none), found by primary-key probes only:
   * doubling steps past `from`, then a binary search between the last hit and the first miss.
   */
  private async lastOf(hourId: string, from = 0): Promise<number> {
    const exists = async (n: number) => n === 0 || (await this.stored(hourId, n));
    let lo = from;
    let step = 1;
    while (await exists(lo + step)) {
      lo += step;
      step *= 2;
    }
    let hi = lo + step; // known missing
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (await exists(mid)) lo = mid;
      else hi = mid;
    }
    return lo;
  }

  /**
   * One group's segments in order (`from`, 1 unless told, and on until one is missing), read one at a time;
   * `hour` is "YYYY-MM-DDTHH" for the ledger, "YYYY-MM-DD" for the late facts.
   */
  async *hourSegments(productId: string, hour: string, from = 1): AsyncGenerator<LedgerSegmentDoc> {
    const hourId = hourIdOf(productId, hour);
    for (let n = from; ; n++) {
      const seg = await this.segments.findOne({ _id: segmentId(hourId, n) });
      if (!seg) return;
      yield seg;
    }
  }

  /** Whether segment `n` of a group is stored (one primary-key probe). */
  hasSegment(productId: string, hour: string, n: number): Promise<boolean> {
    return this.stored(hourIdOf(productId, hour), n);
  }

  private async stored(hourId: string, n: number): Promise<boolean> {
    return (await this.segments.findOne({ _id: segmentId(hourId, n) }, { projection: { _id: 1 } })) !== null;
  }

  /** Whether any segment of the product-day is stored (24 primary-key probes). */
  async hasDay(b: Bucket): Promise<boolean> {
    for (let h = 0; h < 24; h++) {
      if (await this.hasSegment(b.productId, hourOf(b.day, h), 1)) return true;
    }
    return false;
  }

  /**
   * The product-days with segments before `day` (YYYY-MM-DD). A scan on the embedded
   * database, run once a day by the retention job; reads two short fields per segment.
   */
  async daysBefore(day: string): Promise<Bucket[]> {
    const out = new Map<string, Bucket>();
    for await (const s of this.segments.find({ day: { $lt: day } }, { projection: { product_id: 1, day: 1 } })) {
      out.set(`${s.product_id}|${s.day}`, { productId: s.product_id, day: s.day });
    }
    return [...out.values()];
  }

  /**
   * Deletes every segment of one product-day of the ledger (hour grain); returns how many.
   * By primary key, each hour's last segment first: a pass cut off leaves each hour's
   * segments 1 .. k, which the next pass finds and deletes.
   */
  async deleteDay(b: Bucket): Promise<number> {
    let deleted = 0;
    for (let h = 0; h < 24; h++) {
      const hourId = hourIdOf(b.productId, hourOf(b.day, h));
      for (let n = await this.lastOf(hourId); n > 0; n--) deleted += (await this.segments.deleteOne({ _id: segmentId(hourId, n) })).deletedCount;
    }
    return deleted;
  }

  /**
   * Deletes the segments of days before `day` (YYYY-MM-DD); returns how many. A scan on the
   * embedded database, run once a day by the retention job.
   */
  async deleteBefore(day: string): Promise<number> {
    return deleteInRounds(this.segments, { day: { $lt: day } });
  }
}

export const hourOf = (day: string, h: number) => `${day}T${String(h).padStart(2, "0")}`;

/** Where a day's facts are read from, and how much of the late facts a base already holds. */
export interface DaySources {
  /** The ledger, while it holds the day; absent once the day is frozen. */
  ledger?: LedgerStore;
  /** The late facts (a segment per product-day). */
  late: LedgerStore;
  /** How many of the day's late segments are in the base the accumulator starts from. */
  lateFolded?: number;
  /** Ledger hours folded before, taken as they were while no segment came since (a day without late facts only). */
  hours?: HourFolds;
}

/**
 * Folds every fact of one product-day into `acc`, each event key once, reading one segment
 * at a time: the day's late segments first, then the ledger hour by hour. A fact's hour comes
 * from its own timestamp, which is the same on every replay, so a repeated event is always in
 * the same hour of the ledger: only the hour being read keeps its ledger keys. The late facts'
 * keys are kept for the whole day (a fact may be in both; it counts once). Memory follows the
 * largest hour's ledger keys plus the day's late keys, never the day's ledger. The first
 * `lateFolded` late segments are in the base already: their keys are noted, their facts not
 * counted again. Returns how many late segments were read (what a base computed now holds).
 */
export async function foldDay(productId: string, day: string, acc: DayAccumulator, src: DaySources): Promise<number> {
  const late = new Set<string>();
  let n = 0;
  for await (const seg of src.late.hourSegments(productId, day)) foldSegment(seg, ++n > (src.lateFolded ?? 0) ? acc : null, late);
  if (src.ledger) {
    for (let h = 0; h < 24; h++) {
      const hour = hourOf(day, h);
      // An hour folded alone is the same as within its day only when no late fact can overlap it.
      if (src.hours && n === 0) acc.merge(await src.hours.fold(src.ledger, productId, hour));
      else await foldHour(src.ledger, productId, hour, acc, late);
    }
  }
  return n;
}

/**
 * Folds one ledger hour's segments into `acc`, each key once, none of those in `skip`; returns
 * how many segments it read. `seen` ends up holding the hour's keys.
 */
async function foldHour(ledger: LedgerStore, productId: string, hour: string, acc: DayAccumulator, skip?: ReadonlySet<string>, seen = new Set<string>()): Promise<number> {
  let n = 0;
  for await (const seg of ledger.hourSegments(productId, hour)) {
    foldSegment(seg, acc, seen, skip);
    n++;
  }
  return n;
}

/**
 * Adds a segment's facts whose keys are not in `seen` (nor `skip`) to `acc` (null: only notes
 * them) and to `seen`. With `earlier`, the hashes of the keys of segments folded before: false
 * as soon as a key's hash is among them (a fact repeated in another grouping, or a hash
 * collision), and what was added to `acc` by then must be dropped.
 */
function foldSegment(seg: LedgerSegmentDoc, acc: DayAccumulator | null, seen: Set<string>, skip?: ReadonlySet<string>, earlier?: KeyHashes): boolean {
  const fold = <E>(entries: string, kind: "u" | "g", add: (e: E) => void): boolean => {
    for (const [id, e] of JSON.parse(entries) as [string, E][]) {
      const k = `${kind}:${id}`;
      if (seen.has(k) || skip?.has(k)) continue;
      if (earlier?.has(k)) return false;
      seen.add(k);
      add(e);
    }
    return true;
  };
  return fold<UsageEntry>(seg.u, "u", (e) => acc?.usage(e)) && fold<GateEntry>(seg.g, "g", (g) => acc?.gate(g));
}

/**
 * Most rows (DayAccumulator.rows) the folded hours keep: about 60 MB (2,000 users in each of a
 * day's 24 hours, 48,000 rows, held 30 MB in `npm run bench:soak`). An hour's key hashes count
 * as rows by ROW_BYTES.
 */
const HOUR_FOLD_ROWS = 100_000;
const ROW_BYTES = 600;
/** A folded hour no roll asked for this long is let go (yesterday's, a quiet product's). */
const HOUR_FOLD_IDLE_MS = 3_600_000;
const HOUR_MS = 3_600_000;

/** Whether an hour may still gain segments at `now`: the current one, the one before it, and the next (clocks differ). */
function filling(hour: string, now: Date): boolean {
  const age = now.getTime() - Date.parse(`${hour}:00:00Z`);
  return age > -HOUR_MS && age < 2 * HOUR_MS;
}

interface FoldedHour {
  /** Segments 1..segments are in `acc`. */
  segments: number;
  acc: DayAccumulator;
  /** The hashes of those segments' keys (it may hold more), while the hour is filling; else null. */
  keys: KeyHashes | null;
}

/** What a folded hour of `rows` with `keyBytes` of hashes counts against HOUR_FOLD_ROWS. */
const sizeOf = (rows: number, keyBytes: number) => rows + Math.ceil(keyBytes / ROW_BYTES);
const heldSize = (h: FoldedHour) => sizeOf(h.acc.rows, h.keys?.bytes ?? 0);

/**
 * Ledger hours as a roll folded them, in memory, with how many segments each held: a day
 * rolled again refolds only the hours that gained a segment since, so the roll of a busy day
 * costs what changed, not the whole day read again. An hour still filling (`filling`) keeps the
 * hashes of its keys too, and takes only its new segments: a roll of today costs the facts
 * stored since the last, not the whole hour so far; the hashes go once the hour has filled.
 * Exact: an hour's segments are never changed and are numbered from 1 without gaps, so
 * segments 1..n without an n+1 are the whole hour; every repeat of an event is in its own hour
 * (foldDay), so an hour folded alone counts each event once; and a new segment with a key whose
 * hash is among the hour's earlier ones (a fact stored again in another grouping, or a hash
 * collision) has the hour refolded whole.
 *
 * An hour that does not fit is not kept (or kept without its hashes, when that fits), rather
 * than pushing out another: a roll asks for a day's hours in order, and evicting the least
 * recent would push out each hour just before the next roll asks for it, keeping none.
 */
export class HourFolds {
  private readonly held = new LRUCache<string, FoldedHour>({
    maxSize: HOUR_FOLD_ROWS,
    sizeCalculation: heldSize,
    ttl: HOUR_FOLD_IDLE_MS,
    updateAgeOnGet: true,
  });
  private purgedAt = 0;

  constructor(private readonly now: () => Date = () => new Date()) {}

  /** One ledger hour's figures: as folded before while it has no segment since, that plus its new segments, else folded now (and kept when it fits). */
  async fold(ledger: LedgerStore, productId: string, hour: string): Promise<DayAccumulator> {
    const key = hourIdOf(productId, hour);
    const held = this.held.get(key);
    const still = filling(hour, this.now());
    if (held) {
      if (!(await ledger.hasSegment(productId, hour, held.segments + 1))) {
        if (held.keys && !still) this.keep(key, { ...held, keys: null });
        return held.acc;
      }
      const grown = held.keys && still && (await extend(ledger, productId, hour, held));
      if (grown) return this.keep(key, grown).acc;
    }
    const acc = new DayAccumulator();
    const seen = new Set<string>();
    const segments = await foldHour(ledger, productId, hour, acc, undefined, seen);
    // Hashes that would not fit beside the hours kept are not even made; an empty hour needs none
    // (its whole refold reads only what comes).
    const room = HOUR_FOLD_ROWS - this.held.calculatedSize + (held ? heldSize(held) : 0);
    const fit = still && seen.size > 0 && sizeOf(acc.rows, KeyHashes.bytesFor(seen.size)) <= room;
    return this.keep(key, { segments, acc, keys: fit ? KeyHashes.of(seen) : null }).acc;
  }

  private keep(key: string, hour: FoldedHour): FoldedHour {
    this.held.delete(key);
    const fits = (h: FoldedHour) => this.held.calculatedSize + heldSize(h) <= HOUR_FOLD_ROWS;
    // Idle hours are looked for (a walk of all kept) when they may make room, and now and then.
    if (!fits(hour) || performance.now() - this.purgedAt > HOUR_FOLD_IDLE_MS / 60) {
      this.held.purgeStale();
      this.purgedAt = performance.now();
    }
    if (fits(hour)) this.held.set(key, hour);
    else if (hour.keys && fits({ ...hour, keys: null })) this.held.set(key, { ...hour, keys: null });
    return hour;
  }
}

/**
 * A held hour with the segments stored after its own: null when one of their keys' hashes is
 * among the hour's earlier ones (the hour is then refolded whole). The held hour's accumulator
 * is never changed (whoever holds the entry pairs it with its segment count, and an extension
 * cut off must leave nothing half done); its hashes only gain the new keys, once all of them are
 * read, so they stay a superset of its segments' keys whatever happens after.
 */
async function extend(ledger: LedgerStore, productId: string, hour: string, held: FoldedHour): Promise<FoldedHour | null> {
  const keys = held.keys!;
  const added = new DayAccumulator();
  const seen = new Set<string>();
  let n = held.segments;
  for await (const seg of ledger.hourSegments(productId, hour, n + 1)) {
    if (!foldSegment(seg, added, seen, undefined, keys)) return null;
    n++;
  }
  const acc = new DayAccumulator();
  acc.merge(held.acc);
  acc.merge(added);
  for (const k of seen) keys.add(k);
  return { segments: n, acc, keys };
}
