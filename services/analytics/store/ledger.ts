import { createHash } from "node:crypto";
import type { Collection, Db } from "mongodb";
import { isDuplicateKeyError } from "@meter/lib/mongo";
import type { GateEntry, UsageEntry } from "../rollup.ts";

/**
 * The ledger: every fact analytics has been given, once. Facts live in one document per
 * product, UTC hour and bucket (a hash of the event id), as a map keyed by event id, so that
 *  - storing a fact again (a replay) writes the same key in the same document: it can never
 *    be held twice;
 *  - a day is read back with 24 x BUCKETS lookups by _id, whatever else the collection holds;
 *  - a busy hour is spread over BUCKETS documents, keeping each far below the 16 MB document
 *    limit (about 1.6 million events per product and hour) and each write small.
 */
export interface LedgerChunkDoc {
  /** `<product_id>|<YYYY-MM-DDTHH>|<bucket>` */
  _id: string;
  product_id: string;
  day: string;
  /**
   * Entry JSON by event key. One string per fact rather than a nested document: the embedded
   * database encodes and decodes nested values many times slower, and nothing queries inside.
   */
  u?: Record<string, string>;
  g?: Record<string, string>;
}

export interface LedgerFact {
  productId: string;
  eventId: string;
  timestamp: Date;
  kind: "u" | "g";
  entry: UsageEntry | GateEntry;
}

/** Event ids become field names: plain ids keep their text, others are base64url-encoded. */
export function entryKey(eventId: string): string {
  return /^[A-Za-z0-9_-]{1,200}$/.test(eventId) ? `e${eventId}` : `x${Buffer.from(eventId, "utf8").toString("base64url")}`;
}

export const BUCKETS = 16;

const chunkId = (productId: string, hour: string, bucket: number) => `${productId}|${hour}|${bucket}`;

/** Stable bucket of an event key, so a replayed fact lands in the document that holds it. */
export function bucketOf(key: string): number {
  return createHash("sha1").update(key).digest()[0]! % BUCKETS;
}

export function dayChunkIds(productId: string, day: string): string[] {
  return Array.from({ length: 24 * BUCKETS }, (_, i) =>
    chunkId(productId, `${day}T${String(Math.floor(i / BUCKETS)).padStart(2, "0")}`, i % BUCKETS),
  );
}

/** Runs `fn` over `items` with at most `n` in flight. */
export async function inParallel<T, R>(items: readonly T[], n: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

export class LedgerStore {
  private readonly chunks: Collection<LedgerChunkDoc>;

  constructor(db: Db) {
    this.chunks = db.collection<LedgerChunkDoc>("ledger");
  }

  /**
   * Stores the facts; returns how many were not there before. One single-document upsert per
   * hour chunk touched; a crash between chunks leaves some stored, which a replay completes.
   */
  async write(facts: readonly LedgerFact[]): Promise<{ recorded: number; duplicates: number }> {
    const byChunk = new Map<string, { productId: string; day: string; facts: LedgerFact[] }>();
    for (const f of facts) {
      const hour = f.timestamp.toISOString().slice(0, 13);
      const id = chunkId(f.productId, hour, bucketOf(entryKey(f.eventId)));
      let c = byChunk.get(id);
      if (!c) byChunk.set(id, (c = { productId: f.productId, day: hour.slice(0, 10), facts: [] }));
      c.facts.push(f);
    }
    const counts = await inParallel([...byChunk], 8, async ([id, c]) => {
      const existing = await this.chunks.findOne({ _id: id });
      const set: Record<string, unknown> = { product_id: c.productId, day: c.day };
      let fresh = 0;
      for (const f of c.facts) {
        const key = entryKey(f.eventId);
        const path = `${f.kind}.${key}`;
        if (path in set) continue;
        if (!existing?.[f.kind]?.[key]) fresh++;
        set[path] = JSON.stringify(f.entry);
      }
      // Two first writers of a chunk may race to create it; the loser simply updates it.
      const upsert = () => this.chunks.updateOne({ _id: id }, { $set: set }, { upsert: true });
      await upsert().catch((err) => (isDuplicateKeyError(err) ? upsert() : Promise.reject(err)));
      return fresh;
    });
    const recorded = counts.reduce((a, b) => a + b, 0);
    return { recorded, duplicates: facts.length - recorded };
  }

  /** Every fact of one product-day. */
  async readDay(productId: string, day: string): Promise<{ usage: UsageEntry[]; gates: GateEntry[] }> {
    const docs = await inParallel(dayChunkIds(productId, day), 32, (id) => this.chunks.findOne({ _id: id }));
    const usage: UsageEntry[] = [];
    const gates: GateEntry[] = [];
    for (const d of docs) {
      if (!d) continue;
      for (const e of Object.values(d.u ?? {})) usage.push(JSON.parse(e) as UsageEntry);
      for (const e of Object.values(d.g ?? {})) gates.push(JSON.parse(e) as GateEntry);
    }
    return { usage, gates };
  }
}
