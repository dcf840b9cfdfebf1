import type { Collection, Db, Filter } from "mongodb";
import type { JobDoc } from "./jobs.ts";
import { insertedBy, insertIgnoringDuplicates } from "./usage-events.ts";

/** One gate event; `_id` is "<product>/<event id>" (idempotent ingestion by primary key). */
export interface GateEventDoc {
  _id: string;
  product_id: string;
  event_id: string;
  user_id: string;
  service_user_id: string | null;
  session_id: string | null;
  timestamp: Date;
  status: "soft_gate" | "hard_gate";
  gate_reason: string;
  usage_pct: number;
  current_value: number;
  limit_value: number;
  model: string | null;
  blocked: boolean;
  message: string | null;
  /** JSON text of the caller's metadata (see encodeMetadata). */
  metadata: string;
  received_at: Date;
  /** The job (request) that inserted the event. */
  job: string;
}

export interface GateEventQuery {
  productId: string;
  userId: string;
  status?: string;
  gateReason?: string;
  blockedOnly: boolean;
  since?: Date;
  until?: Date;
  /** Position after which to continue (newest first): the last event of the previous page. */
  after?: { timestamp: Date; id: string };
  limit: number;
}

export class GateEventStore {
  readonly gates: Collection<GateEventDoc>;

  constructor(db: Db) {
    this.gates = db.collection<GateEventDoc>("gate_events");
  }

  async init(): Promise<void> {
    await Promise.all([
      this.gates.createIndex({ product_id: 1, user_id: 1, timestamp: -1, _id: -1 }),
    ]);
  }

  async insertNew(docs: GateEventDoc[]): Promise<Set<string>> {
    return insertIgnoringDuplicates(this.gates, docs);
  }

  /** The gate events a job inserted (read when another request completes it). */
  async ofJob(job: Pick<JobDoc, "_id" | "ids">): Promise<GateEventDoc[]> {
    return insertedBy(this.gates, job);
  }

  /**
   * Newest first by (timestamp, _id): a total order, so a page boundary is an exact position
   * and each matching event is on exactly one page, whatever arrives meanwhile.
   */
  async list(q: GateEventQuery): Promise<GateEventDoc[]> {
    const filter: Filter<GateEventDoc> = { product_id: q.productId, user_id: q.userId };
    if (q.status) filter.status = q.status as GateEventDoc["status"];
    if (q.gateReason) filter.gate_reason = q.gateReason;
    if (q.blockedOnly) filter.blocked = true;
    const ts: { $gte?: Date; $lt?: Date } = {};
    if (q.since) ts.$gte = q.since;
    if (q.until) ts.$lt = q.until;
    if (ts.$gte || ts.$lt) filter.timestamp = ts;
    if (q.after) {
      filter.$or = [
        { timestamp: { $lt: q.after.timestamp } },
        { timestamp: q.after.timestamp, _id: { $lt: q.after.id } },
      ];
    }
    return this.gates.find(filter).sort({ timestamp: -1, _id: -1 }).limit(q.limit).toArray();
  }
}
