import type { Collection } from "mongodb";
import { DbStore, insertIgnoringDuplicates } from "@meter/lib/mongo";
import { fromDatedJson, toDatedJson } from "@meter/lib/dated-json";

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
   * starved every writer once a backlog built up.
   */
  payloads: string;
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

export class OutboxStore extends DbStore {
  readonly analytics = this.db.collection<OutboxEntry>("outbox_analytics");
  readonly webhooks = this.db.collection<OutboxEntry>("outbox_webhooks");

  async put(to: Collection<OutboxEntry>, entries: OutboxEntry[]): Promise<void> {
    await insertIgnoringDuplicates(to, entries.filter((e) => e.count > 0));
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

/** The payloads an entry carries. */
export function payloadsOf(e: OutboxEntry): Record<string, unknown>[] {
  return fromDatedJson<Record<string, unknown>[]>(e.payloads);
}

export function entry(kind: OutboxEntry["kind"], subjectId: string, payloads: Record<string, unknown>[]): OutboxEntry {
  return { _id: `${kind}|${subjectId}`, kind, payloads: toDatedJson(payloads), count: payloads.length, created_at: new Date() };
}
