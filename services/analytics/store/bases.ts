import { randomUUID } from "node:crypto";
import { DbStore, deleteInRounds, isDuplicateKeyError } from "@meter/lib/mongo";
import type { BySource, DayAccumulator, DayFigures } from "../domain/rollup.ts";
import type { Bucket } from "./dirty.ts";
import { rowOf, USERS_PER_CHUNK, type StoredDay, type UserChunkDoc, type UserRow } from "./rollups.ts";

/**
 * The base of a frozen day: its figures computed from the ledger (and the late facts stored
 * by then) just before the retention job deleted the day's ledger. Written once, never
 * changed: a frozen day's rollup is recomputed as its base plus the late facts stored after
 * it, so that recomputation stays idempotent without the ledger (see README, "Late facts").
 */
export interface BaseDoc extends StoredDay {
  /** The user chunks are `<_id>|<chunk_key>|0` .. `|n-1`: this writer's own, see `freeze`. */
  chunk_key: string;
  user_chunks: number;
  /** How many of the day's late segments (1 .. n) the base holds. */
  late_folded: number;
  frozen_at: Date;
  /**
   * How many chunks of its teams' figures it has, `<_id>|<chunk_key>|t0` .. `|t<n-1>` (rows
   * `TeamTotalsRow`: each team's figures but its users, which are the user rows with the
   * team). Absent on bases frozen before teams were counted, and on days without teams.
   */
  team_chunks?: number;
}

/** A team's part of a base: id, usage, soft and hard gates, models. */
type TeamTotalsRow = [string, BySource, number, number, [string, BySource["auto"], BySource["manual"]][]];

/** Teams per chunk of a base: a team's row grows with its models, so fewer than users. */
const TEAMS_PER_CHUNK = 200;

/** Stored as in `day_user_rollups`. */
type BaseUserChunkDoc = UserChunkDoc;

const baseId = (b: Bucket) => `${b.productId}|${b.day}`;

export class BaseStore extends DbStore {
  private readonly bases = this.db.collection<BaseDoc>("day_bases");
  private readonly userChunks = this.db.collection<BaseUserChunkDoc>("day_base_users");

  async init(): Promise<void> {
    // For the retention job on MongoDB; the embedded database scans whatever the index.
    await this.bases.createIndex({ day: 1 });
    await this.userChunks.createIndex({ day: 1 });
  }

  async read(b: Bucket): Promise<BaseDoc | null> {
    return this.bases.findOne({ _id: baseId(b) });
  }

  /**
   * Stores a day's base once. Insert only, under a chunk key of this writer's own: of two
   * writers (a retention pass cut off and run again, two replicas) the first base document
   * inserted wins whole, and the loser's chunks, which nothing points to, are deleted. A
   * base is never half one writer's and half another's. False when one was stored already.
   */
  async freeze(b: Bucket, f: DayFigures, lateFolded: number, now: Date): Promise<boolean> {
    const id = baseId(b);
    const key = randomUUID();
    const chunks: BaseUserChunkDoc[] = [];
    for (let i = 0; i * USERS_PER_CHUNK < f.users.length; i++) {
      const rows = f.users.slice(i * USERS_PER_CHUNK, (i + 1) * USERS_PER_CHUNK).map(rowOf);
      chunks.push({ _id: `${id}|${key}|${i}`, product_id: b.productId, day: b.day, users: JSON.stringify(rows) });
    }
    const teams = f.teams ?? [];
    let teamChunks = 0;
    for (; teamChunks * TEAMS_PER_CHUNK < teams.length; teamChunks++) {
      const rows = teams
        .slice(teamChunks * TEAMS_PER_CHUNK, (teamChunks + 1) * TEAMS_PER_CHUNK)
        .map((t): TeamTotalsRow => [t.id, t.figures.usage, t.figures.soft_gates, t.figures.hard_gates, t.figures.models.map((m) => [m.name, m.figures.auto, m.figures.manual])]);
      chunks.push({ _id: `${id}|${key}|t${teamChunks}`, product_id: b.productId, day: b.day, users: JSON.stringify(rows) });
    }
    for (const c of chunks) await this.userChunks.insertOne(c);
    try {
      await this.bases.insertOne({
        _id: id,
        product_id: b.productId,
        day: b.day,
        usage: f.usage,
        soft_gates: f.soft_gates,
        hard_gates: f.hard_gates,
        models: f.models.map((m) => ({ name: m.name, ...m.figures })),
        chunk_key: key,
        user_chunks: chunks.length - teamChunks,
        late_folded: lateFolded,
        frozen_at: now,
        ...(teamChunks > 0 && { team_chunks: teamChunks }),
      });
      return true;
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      if (chunks.length > 0) await this.userChunks.deleteMany({ _id: { $in: chunks.map((c) => c._id) } });
      return false;
    }
  }

  /** Adds a base's figures to `acc`, its teams' and its users one chunk at a time. */
  async addTo(base: BaseDoc, acc: DayAccumulator): Promise<void> {
    acc.addTotals({
      usage: base.usage,
      soft_gates: base.soft_gates,
      hard_gates: base.hard_gates,
      models: base.models.map((m) => ({ name: m.name, figures: { auto: m.auto, manual: m.manual } })),
    });
    for (let i = 0; i < (base.team_chunks ?? 0); i++) {
      const teams = (JSON.parse((await this.chunk(base, `t${i}`)).users) as TeamTotalsRow[]).map(([id, usage, soft_gates, hard_gates, models]) => ({
        id,
        figures: { usage, soft_gates, hard_gates, models: models.map(([name, auto, manual]) => ({ name, figures: { auto, manual } })) },
      }));
      acc.addTeamTotals(teams);
    }
    for (let i = 0; i < base.user_chunks; i++) {
      const c = await this.chunk(base, String(i));
      for (const [id, auto, manual, team] of JSON.parse(c.users) as UserRow[]) acc.addUser(team === undefined ? { id, figures: { auto, manual } } : { id, team, figures: { auto, manual } });
    }
  }

  /** One chunk of a base: a base document is inserted only after all its chunks, which are never changed. */
  private async chunk(base: BaseDoc, n: string): Promise<BaseUserChunkDoc> {
    const c = await this.userChunks.findOne({ _id: `${base._id}|${base.chunk_key}|${n}` });
    if (!c) throw new Error(`base ${base._id} lacks chunk ${n}`);
    return c;
  }

  /** Deletes the bases of days before `day`; returns how many. Chunks first, as for rollups. */
  async deleteBefore(day: string): Promise<number> {
    await deleteInRounds(this.userChunks, { day: { $lt: day } });
    return deleteInRounds(this.bases, { day: { $lt: day } });
  }
}
