import { createHash, randomUUID } from "node:crypto";
import type { Collection } from "mongodb";
import { add, zero, type BySource, type DayFigures, type UserFigures } from "../domain/rollup.ts";
import { productScope, teamScope, teamsScope, type Scope } from "../domain/scopes.ts";
import { DbStore, deleteInRounds, insertIgnoringDuplicates } from "@meter/lib/mongo";

/**
 * Pre-aggregated figures, one document per scope-day (totals, gates, models) plus the day's
 * rows in chunks; a scope is a product, one of its teams, or its teams (domain/scopes.ts).
 * Queries read them only by _id, so their cost depends on the number of days asked for and of
 * rows active in them, never on the number of events.
 */
export interface DayDoc extends StoredDay {
  /** How many user chunks the day has: `<_id>|0` .. `<_id>|n-1`. */
  user_chunks: number;
  computed_at: Date;
  /** Written by a roller that counts late facts (absent on rollups written before them). */
  with_late?: true;
  /**
   * New on every write: what cached user columns are checked against (`versionOf`). Absent on
   * rollups written before it; their `computed_at` and chunk count stand in.
   */
  version?: string;
  /** Of the figures and the chunks' digests: a roll that finds it unchanged writes nothing (absent on older rollups). */
  digest?: string;
}

/** Changes whenever the day's rollup is written again. */
export function versionOf(doc: DayDoc): string {
  return doc.version ?? `${doc.computed_at.toISOString()}|${doc.user_chunks}`;
}

/** A product's figures of one day, as a day rollup and a frozen day's base both store them. */
export interface StoredDay {
  /** `<scope>|<YYYY-MM-DD>` (a product's own scope is its id) */
  _id: string;
  product_id: string;
  day: string;
  /** A team's or the teams' scope (domain/scopes.ts); absent: the product's. */
  scope?: string;
  usage: BySource;
  soft_gates: number;
  hard_gates: number;
  models: { name: string; auto: BySource["auto"]; manual: BySource["manual"] }[];
}

export interface UserChunkDoc {
  _id: string;
  product_id: string;
  day: string;
  /**
   * JSON of `UserRow[]` (`[id, auto figures, manual figures, team?]`). One string rather than nested documents:
   * the embedded database decodes a document with thousands of nested values about 40 times
   * slower than one string holding the same data, and nothing ever queries inside it.
   */
  users: string;
  /** Of `users`: a roll that finds it unchanged does not write the chunk again. */
  digest?: string;
}

/** A row: a user (with its team when the figures were attributed to one) or, in the teams' scope, a team. */
export type UserRow = [string, BySource["auto"], BySource["manual"], string?];

export const rowOf = (u: UserFigures): UserRow => (u.team === undefined ? [u.id, u.figures.auto, u.figures.manual] : [u.id, u.figures.auto, u.figures.manual, u.team]);

/** Day documents asked for in one `$in` (a 365-day summary reads 730). */
const READ_AT_ONCE = 400;

/** Users per chunk document: keeps every document far below the 16 MB limit. */
export const USERS_PER_CHUNK = 2_000;

/** Documents per bulk write when a day's scopes are written (a day of 1,000 teams writes about 2,000). */
const WRITE_AT_ONCE = 500;

const dayId = (scope: Scope, day: string) => `${scope}|${day}`;

export class RollupStore extends DbStore {
  private readonly days = this.db.collection<DayDoc>("day_rollups");
  private readonly userChunks = this.db.collection<UserChunkDoc>("day_user_rollups");

  /**
   * Replaces a day's figures: the product's, each team's with an event that day, and the
   * teams' side by side. Every scope's chunks first, the day documents (which say how many)
   * last. A team's documents are only ever replaced, never left behind: facts are only added,
   * so a day's teams only grow.
   *
   * Only what changed is written: each document carries a digest of its content (a day
   * document's covers its chunks' digests), read back first, so a roll after a few new events
   * rewrites the few teams they touched, not every team of the day; a day document (its
   * `version`) is rewritten whenever it or one of its chunks is.
   */
  async write(productId: string, day: string, f: DayFigures, now: Date): Promise<void> {
    const chunks: UserChunkDoc[] = [];
    const docs: DayDoc[] = [];
    for (const [scope, figures] of scopesOf(productId, f)) {
      const id = dayId(scope, day);
      let n = 0;
      const content = createHash("sha256");
      for (; n * USERS_PER_CHUNK < figures.users.length; n++) {
        const users = JSON.stringify(figures.users.slice(n * USERS_PER_CHUNK, (n + 1) * USERS_PER_CHUNK).map(rowOf));
        const digest = digestOf(users);
        content.update(`${digest}\n`);
        chunks.push({ _id: `${id}|${n}`, product_id: productId, day, users, digest });
      }
      const models = figures.models.map((m) => ({ name: m.name, ...m.figures }));
      content.update(JSON.stringify([figures.usage, figures.soft_gates, figures.hard_gates, models, n]));
      docs.push({
        _id: id,
        product_id: productId,
        day,
        ...(scope !== productScope(productId) && { scope }),
        usage: figures.usage,
        soft_gates: figures.soft_gates,
        hard_gates: figures.hard_gates,
        models,
        user_chunks: n,
        computed_at: now,
        with_late: true,
        version: randomUUID(),
        digest: content.digest("base64url"),
      });
    }
    const [storedChunks, storedDocs] = await Promise.all([storedDigests(this.userChunks, chunks), storedDigests(this.days, docs)]);
    const newChunks = chunks.filter((c) => storedChunks.get(c._id) !== c.digest);
    // A chunk rewritten rewrites its day document too (a new version): columns cached from
    // chunks that differ from the document's (a writer cut off between the two) go stale.
    const chunked = new Set(newChunks.map((c) => c._id.slice(0, c._id.lastIndexOf("|"))));
    const newDocs = docs.filter((d) => storedDocs.get(d._id) !== d.digest || chunked.has(d._id));
    await put(this.userChunks, newChunks, storedChunks);
    await put(this.days, newDocs, storedDocs);
  }

  /**
   * The rollups of these days, in their order (a day without any event has none). One query:
   * the embedded database reads an `_id` `$in` list by its index, several times faster than as
   * many single reads (180 days: 15-40 ms instead of 45-150 on a busy 2-core machine).
   */
  async readDays(scope: Scope, days: readonly string[]): Promise<DayDoc[]> {
    if (days.length === 0) return [];
    const byId = new Map<string, DayDoc>();
    for (let i = 0; i < days.length; i += READ_AT_ONCE) {
      const ids = days.slice(i, i + READ_AT_ONCE).map((d) => dayId(scope, d));
      for (const doc of await this.days.find({ _id: { $in: ids } }).toArray()) byId.set(doc._id, doc);
    }
    return days.flatMap((d) => byId.get(dayId(scope, d)) ?? []);
  }

  /** A day's whole figures as written (its users included), or null when it has none. */
  async readFigures(b: { productId: string; day: string }): Promise<{ figures: DayFigures; withLate: boolean } | null> {
    const [doc] = await this.readDays(b.productId, [b.day]);
    if (!doc) return null;
    const users: UserFigures[] = [];
    await this.readUserRows(doc, (id, auto, manual, team) => users.push(team === undefined ? { id, figures: { auto, manual } } : { id, team, figures: { auto, manual } }));
    const figures: DayFigures = {
      usage: doc.usage,
      soft_gates: doc.soft_gates,
      hard_gates: doc.hard_gates,
      models: doc.models.map((m) => ({ name: m.name, figures: { auto: m.auto, manual: m.manual } })),
      users,
    };
    return { figures, withLate: doc.with_late === true };
  }

  /** Hands over one day's user rows, its chunks read at once, in their stored order. */
  async readUserRows(doc: DayDoc, each: (id: string, auto: UserRow[1], manual: UserRow[2], team: UserRow[3]) => void): Promise<void> {
    const ids = Array.from({ length: doc.user_chunks }, (_, i) => `${doc._id}|${i}`);
    const byId = new Map((await this.userChunks.find({ _id: { $in: ids } }).toArray()).map((c) => [c._id, c]));
    for (const id of ids) {
      const c = byId.get(id);
      if (!c) continue;
      for (const [uid, auto, manual, team] of JSON.parse(c.users) as UserRow[]) each(uid, auto, manual, team);
    }
  }

  /**
   * Deletes the rollups of days before `day` (YYYY-MM-DD); returns how many day documents went.
   * User chunks first: a day document left without its chunks would report users it lost.
   */
  async deleteBefore(day: string): Promise<number> {
    await deleteInRounds(this.userChunks, { day: { $lt: day } });
    return deleteInRounds(this.days, { day: { $lt: day } });
  }
}

/** A day's figures per scope: each team's, the teams' side by side (rows are teams), the product's last. */
function scopesOf(productId: string, f: DayFigures): [Scope, Omit<DayFigures, "teams">][] {
  const teams = f.teams ?? [];
  const scopes: [Scope, Omit<DayFigures, "teams">][] = teams.map((t) => [teamScope(productId, t.id), t.figures]);
  if (teams.length > 0) {
    const usage = teams.reduce((a, t) => ({ auto: add(a.auto, t.figures.usage.auto), manual: add(a.manual, t.figures.usage.manual) }), { auto: zero(), manual: zero() });
    const rows = teams.map((t) => ({ id: t.id, figures: t.figures.usage }));
    scopes.push([teamsScope(productId), { usage, soft_gates: 0, hard_gates: 0, models: [], users: rows }]);
  }
  scopes.push([productScope(productId), f]);
  return scopes;
}

const digestOf = (text: string) => createHash("sha256").update(text).digest("base64url");

/** The digest each of these documents has in the store (null: stored without one); absent: not stored. */
async function storedDigests<T extends { _id: string }>(c: Collection<T>, docs: readonly T[]): Promise<Map<string, string | null>> {
  const stored = new Map<string, string | null>();
  for (let i = 0; i < docs.length; i += READ_AT_ONCE) {
    const ids = docs.slice(i, i + READ_AT_ONCE).map((d) => d._id);
    // @ts-expect-error: the driver's generic filter type does not narrow for a generic T
    for (const d of await c.find({ _id: { $in: ids } }, { projection: { digest: 1 } }).toArray()) stored.set(d._id as string, (d.digest as string | undefined) ?? null);
  }
  return stored;
}

/**
 * Writes documents: those not stored yet by insert (the embedded database inserts about 25
 * times faster than it upserts a new document: a first roll of a day of 1,000 teams writes
 * 2,000), the others by replacement; one inserted meanwhile by another roller is replaced.
 */
async function put<T extends { _id: string }>(c: Collection<T>, docs: readonly T[], stored: ReadonlyMap<string, unknown>): Promise<void> {
  const fresh = docs.filter((d) => !stored.has(d._id));
  const inserted = await insertIgnoringDuplicates(c, fresh);
  await replaceAll(c, [...docs.filter((d) => stored.has(d._id)), ...fresh.filter((d) => !inserted.has(d._id))]);
}

/** Replaces (or inserts) each document by `_id`, a bulk write at a time. */
async function replaceAll<T extends { _id: string }>(c: Collection<T>, docs: readonly T[]): Promise<void> {
  for (let i = 0; i < docs.length; i += WRITE_AT_ONCE) {
    const ops = docs.slice(i, i + WRITE_AT_ONCE).map((d) => ({ replaceOne: { filter: { _id: d._id }, replacement: d, upsert: true } }));
    // @ts-expect-error: the driver's generic filter type does not narrow for a generic T
    await c.bulkWrite(ops, { ordered: false });
  }
}
