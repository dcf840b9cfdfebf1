import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Collection, Filter, UpdateFilter } from "mongodb";
import type { Logger } from "@meter/lib/logger";
import { findByIds } from "@meter/lib/mongo";
import { writeAlone } from "../store/rounds.ts";
import { wide } from "../store/counters.ts";
import { windowDocId } from "./shares.ts";
import type { WindowDoc } from "./store.ts";

/** Documents one pass reads at a time. */
const PASS_BATCH = 500;

/**
 * Passes after the first: a minute apart for ten minutes (documents an older replica still wrote
 * during a rolling upgrade), then hourly for as long as the process runs (one read of an empty
 * collection each): a document left by a later straggler does not wait for a restart.
 */
const EARLY_PASSES = 10;
const EARLY_INTERVAL_MS = 60_000;
const LATE_INTERVAL_MS = 3_600_000;

/** A window document before it moved: `<product>|<user>` in "windows" (`<product>|<team>` in "team_windows"). */
export type StoredBefore = WindowDoc & { team_id?: string; move_id?: string };

/**
 * Moves window documents from the "windows" collection, where they were kept before, into
 * "counters" beside the users' period counters (`<product>|w|<user>`), so that a session reads
 * a user's counter and window document with one command; teams' likewise, from "team_windows"
 * into "team_counters".
 *
 * Until a pass has found the old collection empty, every access to a user's window document
 * moves that user's first (`ensure`): one read more, only then. A move is one guarded update
 * (`jobs.move-<move id>`, as a job's addition is guarded) that adds the old counts to whatever
 * the new document holds, carries its job guards (a job completed there is not counted again)
 * and its lease slices, and bumps the version (a grant computed before it does not land); then
 * the old document is deleted. Movers on several replicas agree on one move id first, so the
 * counts are added once; a crash between the update and the delete is finished by the next pass.
 * What an older replica adds to an old document between its move's read and its delete, during
 * a rolling upgrade, is lost: milliseconds of a deploy, against no read path left behind.
 */
export class WindowDocMove {
  private pending = true;
  private readonly stopped = new AbortController();

  constructor(
    private readonly from: Collection<StoredBefore>,
    private readonly to: Collection<WindowDoc>,
    private readonly now: () => Date,
    private readonly logger?: Logger,
    private readonly owner: "user_id" | "team_id" = "user_id",
  ) {}

  /** Moves the users of these window document ids (`<product>|w|<user>`) whose documents have not moved yet. */
  async ensure(ids: readonly string[]): Promise<void> {
    if (!this.pending) return;
    for (const doc of await findByIds(this.from, ids.map(oldWindowDocId))) await this.moveOne(doc);
  }

  /** Moves every document of the old collection; true when it found none left. */
  async pass(): Promise<boolean> {
    let moved = 0;
    for (;;) {
      const docs = await this.from.find({}).limit(PASS_BATCH).toArray();
      if (docs.length === 0) break;
      for (const doc of docs) await this.moveOne(doc);
      moved += docs.length;
    }
    if (moved > 0) this.logger?.info({ moved, from: this.from.collectionName, to: this.to.collectionName }, "window documents moved beside the counters");
    this.pending = false;
    return moved === 0;
  }

  /** A pass now, in the background, then more later (see EARLY_PASSES); `stop` ends them. */
  start(): void {
    void (async () => {
      for (let i = 0; !this.stopped.signal.aborted; i++) {
        await this.pass().catch((err: unknown) => this.logger?.warn({ err }, "moving window documents failed; retrying"));
        await sleep(i < EARLY_PASSES ? EARLY_INTERVAL_MS : LATE_INTERVAL_MS, undefined, { signal: this.stopped.signal }).catch(() => {});
      }
    })();
  }

  stop(): void {
    this.stopped.abort();
  }

  private async moveOne(read: StoredBefore): Promise<void> {
    const doc = await this.agreeOnMove(read);
    if (!doc) return;
    const id = newWindowDocId(doc._id);
    await writeAlone(this.to, id, `move-${doc.move_id}`, moveStatement(doc, id, this.owner, this.now().getTime()));
    await this.from.deleteOne({ _id: doc._id, move_id: doc.move_id } as Filter<StoredBefore>);
  }

  /**
   * Names the move of `doc`, or takes the name another mover gave it first; null when it is gone.
   * A document found again without a name was moved and written anew since (an older replica):
   * it is named again, as a document of its own.
   */
  private async agreeOnMove(read: StoredBefore): Promise<StoredBefore | null> {
    for (let doc: StoredBefore | null = read; doc; doc = await this.from.findOne({ _id: doc._id })) {
      if (doc.move_id) return doc;
      const moveId = randomUUID();
      const named = await this.from.findOneAndUpdate({ _id: doc._id, move_id: { $exists: false } } as Filter<StoredBefore>, { $set: { move_id: moveId } }, { returnDocument: "after" });
      if (named) return named;
    }
    return null;
  }
}

/** The guarded statement that adds an old document to the user's document in "counters". */
function moveStatement(doc: StoredBefore, id: string, owner: "user_id" | "team_id", now: number) {
  const inc: Record<string, unknown> = { version: wide((doc.version ?? 0) + 1) };
  const max: Record<string, unknown> = {};
  const set: Record<string, unknown> = { [`jobs.move-${doc.move_id}`]: 1 };
  for (const [key, { n, e }] of Object.entries(doc.w ?? {})) {
    // An ended entry can no longer gate nor be read.
    if (Number(e) <= now) continue;
    inc[`w.${key}.n`] = wide(Number(n));
    max[`w.${key}.e`] = wide(Number(e));
  }
  for (const job of Object.keys(doc.jobs ?? {})) set[`jobs.${job}`] = 1;
  for (const [holder, lease] of Object.entries(doc.leases ?? {})) set[`leases.${holder}`] = lease;
  const update = {
    $inc: inc,
    $set: set,
    ...(Object.keys(max).length > 0 ? { $max: max } : {}),
    $setOnInsert: { product_id: doc.product_id, [owner]: doc[owner] },
  } as UpdateFilter<WindowDoc>;
  return { filter: { _id: id, [`jobs.move-${doc.move_id}`]: { $exists: false } } as Filter<WindowDoc>, update };
}

/** `<product>|<user>` (the "windows" collection's id) for `<product>|w|<user>`. */
export function oldWindowDocId(id: string): string {
  const at = id.indexOf("|w|");
  return `${id.slice(0, at)}|${id.slice(at + 3)}`;
}

/** windowDocId for `<product>|<user>`: product ids hold no `|`. */
function newWindowDocId(old: string): string {
  const at = old.indexOf("|");
  return windowDocId(old.slice(0, at), old.slice(at + 1));
}
