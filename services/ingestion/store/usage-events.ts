import type { Collection } from "mongodb";
import type { WindowShare } from "../windows/shares.ts";
import type { TeamShare } from "../teams/shares.ts";
import { DbStore, deleteInRounds, findByIds, insertIgnoringDuplicates } from "@meter/lib/mongo";
import { addDollars } from "@meter/rules";
import { fromDatedJson, toDatedJson } from "@meter/lib/dated-json";

export type EventSource = "auto" | "manual";

/**
 * One usage event (batch or manual). `_id` is "<product>/<event id>" so that the primary key
 * itself makes ingestion idempotent within a product; a manual event sent with an
 * idempotency key is keyed "<product>/idem/<sha256 of the key>" instead.
 */
export interface UsageEventDoc {
  _id: string;
  product_id: string;
  /** The id the API shows: the client's UUID, or "evt_<uuid>" for manual events. */
  event_id: string;
  user_id: string;
  /** False when user_id was not a registered user when the event arrived. */
  user_known: boolean;
  session_id: string | null;
  timestamp: Date;
  model: string | null;
  /**
   * The model the counters file this event under when it is not `model`: OTHER_MODELS once
   * its counter held MAX_COUNTER_MODELS others (domain/counter-bounds.ts). Absent otherwise.
   */
  counted_model?: string;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  tool_calls: string[];
  tool_call_count: number;
  cost_tokens: number;
  cost_tools: number;
  cost_total: number;
  /** JSON text of the caller's metadata (see encodeMetadata). */
  metadata: string;
  source: EventSource;
  description: string | null;
  /** The job (request) that inserted the event; it adds the event to its counter. */
  job: string;
  /** The per-user period counter this event is added to, and what it was attributed to. */
  counter_id: string;
  period_start: Date;
  period_end: Date;
  plan_name: string | null;
  spend_limit: number | null;
  /**
   * Set when the plan has credits enabled and an allowance (spend_limit): usage beyond it draws
   * the owner's credits (credits/settle.ts); low_at is the plan's credits_low_at.
   */
  credits?: { low_at: number | null };
  received_at: Date;
  /** The budget lease the cost was spent from, if any (settled against it in the period counter). */
  lease_id?: string | null;
  /**
   * What the event adds to the windows of its plan's limits (windows/shares.ts), and to its team
   * plan's member-scope windows (teams/shares.ts); absent when it has none.
   */
  windows?: WindowShare[];
  /** What the event adds to the team its user was a member of at its timestamp (teams/shares.ts); absent: none. */
  team?: TeamShare;
  /** The external id of the team the user was a member of at the event's timestamp, plan or not (analytics' team); absent: none. */
  team_id?: string;
}

/**
 * The fields a stored event leaves out when they hold what its reader rebuilds (`expand`):
 * values its other fields imply, and the usual empty ones. The embedded database spends on an
 * insert by the size of the document (FerretDB writes each field with its type beside it, then
 * SQLite parses the text again to index `_id`): 27 fields cost about a third more than 13.
 * Each is left out only when the rebuilt value is exactly the one written, so a read gives
 * back the document as it was built; documents stored whole before read as they are.
 */
type Defaulted =
  | "event_id"
  | "user_known"
  | "session_id"
  | "tool_calls"
  | "tool_call_count"
  | "total_tokens"
  | "cost_tools"
  | "cost_total"
  | "metadata"
  | "source"
  | "description"
  | "plan_name"
  | "spend_limit"
  | "lease_id";

const DEFAULTS: { [K in Defaulted]: (d: StoredUsageEvent) => UsageEventDoc[K] } = {
  event_id: (d) => d._id.slice(d.product_id.length + 1),
  user_known: () => true,
  session_id: () => null,
  tool_calls: () => [],
  tool_call_count: (d) => d.tool_calls?.length ?? 0,
  total_tokens: (d) => d.input_tokens + d.output_tokens,
  cost_tools: () => 0,
  cost_total: (d) => addDollars(d.cost_tokens, d.cost_tools ?? 0),
  metadata: () => "{}",
  source: () => "auto",
  description: () => null,
  plan_name: () => null,
  spend_limit: () => null,
  lease_id: () => null,
};

/** DEFAULTS in their order, listed once (compact and expand run for every event). */
const DEFAULT_ENTRIES = Object.entries(DEFAULTS) as [Defaulted, (d: StoredUsageEvent) => unknown][];

/**
 * The nested parts stored as one string each (dated JSON): nothing filters on them, the job that
 * counts the event reads them whole, and the embedded database spends on an insert by the fields
 * it writes (a team member's event with four windows carries some forty nested fields).
 */
type Packed = "windows" | "team";
const PACKED: readonly Packed[] = ["windows", "team"];

/** A usage event as stored: the fields of DEFAULTS may be absent, those of PACKED are text. */
export type StoredUsageEvent = Omit<UsageEventDoc, Defaulted | Packed> &
  Partial<Pick<UsageEventDoc, Defaulted>> & { [K in Packed]?: UsageEventDoc[K] | string };

/** The document to store: `d` without the fields that hold what expand() rebuilds from the rest, its nested parts as text. */
export function compact(d: UsageEventDoc): StoredUsageEvent {
  const out: Record<string, unknown> = { ...d };
  // In the order of DEFAULTS, each checked against what is left: a default may read a field left out before it.
  for (const [field, rebuild] of DEFAULT_ENTRIES) {
    const value = out[field];
    const rebuilt = rebuild(out as StoredUsageEvent);
    if (Object.is(value, rebuilt) || (Array.isArray(value) && value.length === 0 && Array.isArray(rebuilt) && rebuilt.length === 0)) delete out[field];
  }
  for (const field of PACKED) if (out[field] !== undefined) out[field] = toDatedJson(out[field]);
  return out as StoredUsageEvent;
}

/** A stored event as built: the fields compact() left out, rebuilt; its nested parts parsed (stored as documents before: as they are). */
export function expand(s: StoredUsageEvent): UsageEventDoc {
  const out: Record<string, unknown> = { ...s };
  for (const field of PACKED) if (typeof out[field] === "string") out[field] = fromDatedJson(out[field]);
  for (const [field, rebuild] of DEFAULT_ENTRIES) {
    if (out[field] === undefined) out[field] = rebuild(out as StoredUsageEvent);
  }
  return out as unknown as UsageEventDoc;
}

export class UsageEventStore extends DbStore {
  readonly events = this.db.collection<StoredUsageEvent>("usage_events");

  /**
   * Inserts every document whose `_id` is new (compacted); the rest are duplicates. Returns
   * the ids inserted by this call.
   */
  async insertNew(docs: UsageEventDoc[]): Promise<Set<string>> {
    return insertIgnoringDuplicates(this.events, docs.map(compact));
  }

  async get(id: string): Promise<UsageEventDoc | null> {
    const s = await this.events.findOne({ _id: id });
    return s && expand(s);
  }

  /**
   * Retention: events received before `t` (a daily scan), except those of jobs still open,
   * which a takeover reads to complete them.
   */
  async deleteReceivedBefore(t: Date, openJobs: Set<string>): Promise<number> {
    return await deleteInRounds(this.events, { received_at: { $lt: t }, job: { $nin: [...openJobs] } });
  }

  /** Events by stored `_id`, read by `_id` lists (absent ones are left out). */
  async getMany(ids: readonly string[]): Promise<UsageEventDoc[]> {
    return (await findByIds(this.events, ids)).map(expand);
  }

  /** The events a job inserted (read when another request completes it). */
  async ofJob(job: JobEvents): Promise<UsageEventDoc[]> {
    return (await insertedBy(this.events, job)).map(expand);
  }
}

/** A job as the event stores read it: its id and the stored `_id`s of the events it offered. */
export interface JobEvents {
  _id: string;
  ids: string[];
}

/**
 * The documents among a job's offered ids that carry the job's id, read by `_id` (a filter on
 * `job` would read the whole collection on the embedded database).
 */
export async function insertedBy<D extends { _id: string; job: string }>(
  collection: Collection<D>,
  job: JobEvents,
): Promise<D[]> {
  return (await findByIds(collection, job.ids as never)).filter((d) => d.job === job._id);
}
