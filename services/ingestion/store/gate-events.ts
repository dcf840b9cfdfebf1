import type { GateEventFacts } from "@meter/rules";
import { DbStore, deleteInRounds, insertIgnoringDuplicates } from "@meter/lib/mongo";
import pMap from "p-map";
import { UPDATES_IN_FLIGHT } from "./counters.ts";
import { insertedBy, type JobEvents } from "./usage-events.ts";

/** One gate event; `_id` is "<product>/<event id>" (idempotent ingestion by primary key). */
export interface GateEventDoc extends GateEventFacts {
  _id: string;
  product_id: string;
  event_id: string;
  timestamp: Date;
  /** JSON text of the caller's metadata (see encodeMetadata). */
  metadata: string;
  received_at: Date;
  /** The job (request) that inserted the event. */
  job: string;
  /** The external id of the team the user was a member of at the event's timestamp (analytics' team); absent: none. */
  team_id?: string;
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

/** A user's gate events of one UTC hour (by timestamp), as listed. */
interface GateHourDoc {
  /** "<product>|<user>|<hour, ms since epoch>" */
  _id: string;
  /** Start of the hour (retention). */
  hour: Date;
  events: Omit<GateEventDoc, "job">[];
}

/** The hours in which a user has gate events. */
interface GateHoursDoc {
  /** "<product>|<user>" */
  _id: string;
  hours: number[];
}

const HOUR = 3_600_000;
/** Hour buckets read at once while listing. */
const READ_AHEAD = 4;
/**
 * Most hour buckets one listing call reads: the page size (a page of one event per hour is
 * still full), and at least this many. A page not full by then ends with a cursor there.
 */
export const MIN_HOURS_PER_PAGE = 48;
/** Statements per write command while filing: other writers get the database in between. */
const FILE_CHUNK = 100;

/**
 * Gate events are stored by id (idempotent ingestion) and listed from per-user hour buckets,
 * found by primary key through the user's list of hours: a listing reads the user's own
 * events, newest hours first, until a page is full, never the product's whole collection
 * (on the embedded database any filter but `_id` reads the whole collection).
 */
export class GateEventStore extends DbStore {
  readonly gates = this.db.collection<GateEventDoc>("gate_events");
  private readonly hours = this.db.collection<GateHourDoc>("gate_event_hours");
  private readonly users = this.db.collection<GateHoursDoc>("gate_event_users");

  async insertNew(docs: GateEventDoc[]): Promise<Set<string>> {
    return insertIgnoringDuplicates(this.gates, docs);
  }

  /**
   * Retention: events received before `t` (a daily scan), except those of jobs still open,
   * which a takeover reads to complete them.
   */
  async deleteReceivedBefore(t: Date, openJobs: Set<string>): Promise<number> {
    return await deleteInRounds(this.gates, { received_at: { $lt: t }, job: { $nin: [...openJobs] } });
  }

  /**
   * Retention of the listing: hour buckets of hours before `t` (a daily scan of the buckets),
   * in rounds; each round then takes its hours out of their users' lists. A listing between
   * the two steps skips the missing bucket.
   */
  async deleteHoursBefore(t: Date): Promise<number> {
    return await deleteInRounds(this.hours, { hour: { $lt: t } }, async (ids) => {
      const byUser = new Map<string, number[]>();
      for (const id of ids) {
        const cut = id.lastIndexOf("|");
        const user = id.slice(0, cut);
        byUser.set(user, [...(byUser.get(user) ?? []), Number(id.slice(cut + 1))]);
      }
      await pMap([...byUser], ([user, hours]) => this.users.updateOne({ _id: user }, { $pullAll: { hours } }), { concurrency: UPDATES_IN_FLIGHT });
    });
  }

  /** The gate events a job inserted (read when another request completes it). */
  async ofJob(job: JobEvents): Promise<GateEventDoc[]> {
    return insertedBy(this.gates, job);
  }

  /**
   * Files newly inserted events in their users' hour buckets. `$addToSet` makes a repeat
   * (a job completed again after a crash) change nothing: the entries are built from the
   * same stored documents.
   */
  async file(docs: readonly GateEventDoc[]): Promise<void> {
    if (docs.length === 0) return;
    const buckets = new Map<string, { hour: number; events: Omit<GateEventDoc, "job">[] }>();
    const userHours = new Map<string, Set<number>>();
    for (const { job: _, ...d } of docs) {
      const hour = Math.floor(d.timestamp.getTime() / HOUR) * HOUR;
      const user = `${d.product_id}|${d.user_id}`;
      const id = `${user}|${hour}`;
      const bucket = buckets.get(id);
      if (bucket) bucket.events.push(d);
      else buckets.set(id, { hour, events: [d] });
      const hours = userHours.get(user) ?? new Set();
      hours.add(hour);
      userHours.set(user, hours);
    }
    // Unordered commands of at most FILE_CHUNK upserts by `_id` (no statement depends on
    // another): a batch spread over many hours never holds the database in one long command.
    const bucketWrites = [...buckets].map(([id, { hour, events }]) => ({
      updateOne: { filter: { _id: id }, update: { $addToSet: { events: { $each: events } }, $setOnInsert: { hour: new Date(hour) } }, upsert: true },
    }));
    for (let i = 0; i < bucketWrites.length; i += FILE_CHUNK) {
      await this.hours.bulkWrite(bucketWrites.slice(i, i + FILE_CHUNK), { ordered: false });
    }
    const userWrites = [...userHours].map(([id, hours]) => ({
      updateOne: { filter: { _id: id }, update: { $addToSet: { hours: { $each: [...hours] } } }, upsert: true },
    }));
    for (let i = 0; i < userWrites.length; i += FILE_CHUNK) {
      await this.users.bulkWrite(userWrites.slice(i, i + FILE_CHUNK), { ordered: false });
    }
  }

  /**
   * Newest first by (timestamp, _id): a total order, so a page boundary is an exact position
   * and each matching event is on exactly one page, whatever arrives meanwhile. A call reads
   * at most as many hour buckets as the page holds events (MIN_HOURS_PER_PAGE at least), so its
   * cost follows the page, not the user's history:
   * when filters match little and hours remain unread, `resumeBefore` is the start of the
   * oldest hour read, where the next call goes on (the page may then hold fewer events).
   */
  async list(q: GateEventQuery): Promise<{ docs: GateEventDoc[]; resumeBefore?: Date }> {
    const user = `${q.productId}|${q.userId}`;
    const index = await this.users.findOne({ _id: user });
    const upTo = Math.min(q.until?.getTime() ?? Infinity, (q.after?.timestamp.getTime() ?? Infinity) + 1);
    const from = q.since?.getTime() ?? -Infinity;
    const hours = [...new Set(index?.hours ?? [])]
      .filter((h) => h + HOUR > from && h < upTo)
      .sort((a, b) => b - a);
    const out: GateEventDoc[] = [];
    const reach = Math.min(hours.length, Math.max(MIN_HOURS_PER_PAGE, q.limit));
    for (let i = 0; i < reach && out.length < q.limit; i += READ_AHEAD) {
      const docs = await Promise.all(hours.slice(i, Math.min(i + READ_AHEAD, reach)).map((h) => this.hours.findOne({ _id: `${user}|${h}` })));
      for (const doc of docs) {
        if (out.length >= q.limit) break;
        const seen = new Set<string>();
        const page = (doc?.events ?? [])
          .filter((e) => !seen.has(e._id) && seen.add(e._id) && matches(e, q))
          .sort((a, b) => b.timestamp.getTime() - a.timestamp.getTime() || (a._id < b._id ? 1 : a._id > b._id ? -1 : 0));
        out.push(...(page.slice(0, q.limit - out.length) as GateEventDoc[]));
      }
    }
    if (out.length < q.limit && hours.length > reach) return { docs: out, resumeBefore: new Date(hours[reach - 1]!) };
    return { docs: out };
  }
}

function matches(e: Omit<GateEventDoc, "job">, q: GateEventQuery): boolean {
  const t = e.timestamp.getTime();
  if (q.status && e.status !== q.status) return false;
  if (q.gateReason && e.gate_reason !== q.gateReason) return false;
  if (q.blockedOnly && !e.blocked) return false;
  if (q.since && t < q.since.getTime()) return false;
  if (q.until && t >= q.until.getTime()) return false;
  if (q.after) {
    const at = q.after.timestamp.getTime();
    if (t > at || (t === at && e._id >= q.after.id)) return false;
  }
  return true;
}
