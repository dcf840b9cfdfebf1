import type { Collection, Db } from "mongodb";
import { insertIgnoringDuplicates } from "./usage-events.ts";

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
  kind: "usage" | "gate" | "threshold";
  payloads: Record<string, unknown>[];
  created_at: Date;
}

export class OutboxStore {
  readonly analytics: Collection<OutboxEntry>;
  readonly webhooks: Collection<OutboxEntry>;

  constructor(db: Db) {
    this.analytics = db.collection<OutboxEntry>("outbox_analytics");
    this.webhooks = db.collection<OutboxEntry>("outbox_webhooks");
  }

  async put(to: Collection<OutboxEntry>, entries: OutboxEntry[]): Promise<void> {
    await insertIgnoringDuplicates(to, entries.filter((e) => e.payloads.length > 0));
  }
}

export function entry(kind: OutboxEntry["kind"], subjectId: string, payloads: Record<string, unknown>[]): OutboxEntry {
  return { _id: `${kind}|${subjectId}`, kind, payloads, created_at: new Date() };
}
