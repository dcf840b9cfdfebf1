import type { Collection, Db } from "mongodb";
import { insertIgnoringDuplicates } from "./usage-events.ts";

/**
 * Transactional outbox: what must be handed to a peer, written in the request's own write
 * path (before its job is closed) and deleted only once the peer acknowledged it. Entries
 * are keyed by what they describe, so writing one twice is harmless; the collections hold
 * only what is not yet handed over.
 */
export interface OutboxEntry {
  /** "<kind>|<stored id of the subject>". */
  _id: string;
  kind: "usage" | "gate" | "threshold";
  payload: Record<string, unknown>;
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
    await insertIgnoringDuplicates(to, entries);
  }
}

export function entry(kind: OutboxEntry["kind"], subjectId: string, payload: Record<string, unknown>): OutboxEntry {
  return { _id: `${kind}|${subjectId}`, kind, payload, created_at: new Date() };
}
