import type { Binary, Collection } from "mongodb";
import { DbStore, insertIgnoringDuplicates } from "@meter/lib/mongo";
import { fromDatedJson, toDatedJson } from "@meter/lib/dated-json";
import { deflateText, inflateText } from "./deflated.ts";

/**
 * Transactional outbox: what must be handed to a peer, written in the request's own write
 * path (before its job is closed) and deleted only once the peer acknowledged all of it.
 * One entry per job (or per crossing) keeps this to one insert per request. Entries are
 * keyed by what they describe, so writing one twice is harmless; the collections hold only
 * what is not yet handed over.
 */
export interface OutboxEntry {
  /** "<kind>|<job id or crossing id>". */
  _id: string;
  kind: "usage" | "gate" | "threshold" | "credits";
  /**
   * The payloads as dated JSON (`@meter/lib/dated-json`: dates survive; entries written before
   * it hold Extended JSON, which it reads). One string rather than an array of
   * documents: the relay scans these collections, and the embedded database decodes a
   * thousand nested documents about 40 times slower than one string holding them, which
   * starved every writer once a backlog built up. What `entry` makes and this process holds
   * (WrittenEntries); the collection holds it deflated (`deflated`), but in entries written
   * before that.
   */
  payloads?: string;
  /**
   * The payloads' text, raw-deflated (level 1): a batch's entry is about 40 kB instead of
   * 240 kB, and the embedded database's insert and delete of an entry cost with its size (its
   * pages, and SQLite reading the whole text to find the `_id` it indexes): deleting the
   * analytics entries of 20,000 events held the database's writes 98 ms (docs/benchmarks.md,
   * "Ingestion").
   */
  deflated?: Binary;
  count: number;
  created_at: Date;
  /** Failed handovers of this entry that its own content may have caused (relay/outbox.ts). */
  attempts?: number;
  last_error?: string;
  /** Set after the last allowed attempt: the relay passes the entry by until it is replayed. */
  set_aside_at?: Date;
}

/** Entries the relay still hands over (the others are set aside). */
export const WAITING = { set_aside_at: { $exists: false } } as const;

/** Most payload characters WrittenEntries holds (an entry of 1,000 events is about 200,000). */
const WRITTEN_CHARS = 16_000_000;

/** An entry as `entry` makes it: its payloads' text at hand. */
export type NewEntry = OutboxEntry & { payloads: string };

/**
 * Entries this process wrote to an outbox and has not handed over, as written, oldest first:
 * the relay's round in this process sends them without reading them back (relay/outbox.ts),
 * which spared reading every entry twice (a scan for ids, then the entry) at a busy embedded
 * database (docs/benchmarks.md, "Ingestion"). Only a shortcut: the collection stays the
 * truth, an entry is deleted there only once its peer acknowledged it, and one this process
 * does not hold (after a restart, past WRITTEN_CHARS waiting) is read from there as before.
 */
export class WrittenEntries {
  /** By id: the entry, and whether its insert has landed (only then may a round take it). */
  private readonly held = new Map<string, { e: NewEntry; stored: boolean }>();
  private chars = 0;

  /**
   * Holds entries about to be inserted: a scan passes them by from now on, and a round may take
   * them once `stored` says their insert landed (sent before it, the acknowledged entry's delete
   * would find nothing and the insert would leave it to be sent again).
   */
  add(entries: readonly NewEntry[]): void {
    for (const e of entries) {
      if (this.held.has(e._id) || this.chars + e.payloads.length > WRITTEN_CHARS) continue;
      this.held.set(e._id, { e, stored: false });
      this.chars += e.payloads.length;
    }
  }

  /** The insert of `entries` ended: those in `inserted` may be taken; the others (there before, or not written) are left to the collection. */
  stored(entries: readonly OutboxEntry[], inserted: ReadonlySet<string>): void {
    for (const { _id } of entries) {
      const h = this.held.get(_id);
      if (!h) continue;
      if (inserted.has(_id)) h.stored = true;
      else this.drop(_id);
    }
  }

  /** Takes up to `max` stored entries of `kind`, oldest first: the caller hands them over or leaves them to the collection. */
  take(kind: OutboxEntry["kind"], max: number): NewEntry[] {
    const out: NewEntry[] = [];
    for (const [id, h] of this.held) {
      if (out.length === max) break;
      if (h.e.kind !== kind || !h.stored) continue;
      out.push(h.e);
      this.drop(id);
    }
    return out;
  }

  /** The ids held of `kind`, stored or on their way (what a scan of the collection passes by). */
  ids(kind: OutboxEntry["kind"]): string[] {
    return [...this.held.values()].filter((h) => h.e.kind === kind).map((h) => h.e._id);
  }

  private drop(id: string): void {
    const h = this.held.get(id);
    if (!h) return;
    this.held.delete(id);
    this.chars -= h.e.payloads.length;
  }
}

export class OutboxStore extends DbStore {
  readonly analytics = this.db.collection<OutboxEntry>("outbox_analytics");
  readonly webhooks = this.db.collection<OutboxEntry>("outbox_webhooks");
  /** What this process wrote to `analytics` (the outbox with the volume): see WrittenEntries. */
  readonly analyticsWritten = new WrittenEntries();

  async put(to: Collection<OutboxEntry>, entries: NewEntry[]): Promise<void> {
    const some = entries.filter((e) => e.count > 0);
    const written = to === this.analytics ? this.analyticsWritten : undefined;
    written?.add(some);
    let inserted: ReadonlySet<string> = new Set();
    try {
      inserted = await insertIgnoringDuplicates(to, await Promise.all(some.map(deflated)));
    } finally {
      written?.stored(some, inserted);
    }
  }

  /**
   * Puts set-aside entries back in line (all of them, or those of `ids`), with their attempts
   * reset: once what made them fail is fixed, the next relay round hands them over.
   */
  async replay(to: Collection<OutboxEntry>, ids?: readonly string[]): Promise<number> {
    const filter = ids ? { _id: { $in: [...ids] }, set_aside_at: { $exists: true } } : { set_aside_at: { $exists: true } };
    const res = await to.updateMany(filter, { $unset: { set_aside_at: "", attempts: "", last_error: "" } });
    return res.modifiedCount;
  }
}

/** An entry as the collection keeps it (deflated). */
async function deflated(e: NewEntry): Promise<OutboxEntry> {
  const { payloads, ...rest } = e;
  return { ...rest, deflated: await deflateText(payloads) };
}

/** The payloads an entry carries (deflated, or as text in entries written before). */
export function payloadsOf(e: OutboxEntry): Record<string, unknown>[] {
  const text = e.deflated ? inflateText(e.deflated) : e.payloads;
  if (text === undefined) throw new Error(`outbox entry ${e._id} holds no payloads`);
  return fromDatedJson<Record<string, unknown>[]>(text);
}

export function entry(kind: OutboxEntry["kind"], subjectId: string, payloads: Record<string, unknown>[]): NewEntry {
  return { _id: `${kind}|${subjectId}`, kind, payloads: toDatedJson(payloads), count: payloads.length, created_at: new Date() };
}
