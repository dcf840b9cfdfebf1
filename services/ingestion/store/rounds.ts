import type { Collection, Document, Filter, UpdateFilter } from "mongodb";
import { isDuplicateKeyError } from "@meter/lib/mongo";
import { chunks, STATEMENTS_PER_COMMAND } from "./commands.ts";

/**
 * Rounds of guarded additions (counters: store/counters.ts, window documents: windows/store.ts),
 * written by lib's GroupCommit: the deltas of every job queued go together, one statement a
 * document guarded by all of its jobs' entries (`{_id, "jobs.<a>": {$exists: false}, ...}`).
 */

/** One job's delta for a document. */
export interface Addition<D> {
  jobId: string;
  d: D;
}

/** A job's deltas waiting for their round. */
export interface RoundRequest<D> {
  jobId: string;
  deltas: readonly D[];
  now: Date;
}

/** The deltas of a request's kind. */
type Delta<R extends RoundRequest<{ id: string }>> = R["deltas"][number];

/** The time a round's statements are written as of: its earliest request's (nothing counts in a window that ended for any of them). */
export function roundTime(requests: readonly RoundRequest<unknown>[]): Date {
  return new Date(Math.min(...requests.map((r) => r.now.getTime())));
}

/**
 * Writes one round. `write` gets every document's additions (one statement each); a statement
 * that finds one of its jobs already added collides on `_id`, and then each job's deltas go
 * `alone` (one guarded statement each), where that collision is told apart from a real
 * conflict: the statements the round applied change nothing the second time. A job asked twice
 * in one round (two completions of it at once) must not add twice under one guard: its repeat
 * goes alone, after. `now` is the round's earliest.
 */
export async function writeRound<R extends RoundRequest<{ id: string }>>(
  requests: readonly R[],
  write: (documents: Addition<Delta<R>>[][], now: Date) => Promise<void>,
  alone: (r: R, now: Date) => Promise<unknown>,
): Promise<void> {
  const now = roundTime(requests);
  const jobs = new Set<string>();
  const repeats = new Set(requests.filter((r) => jobs.size === jobs.add(r.jobId).size));
  const firsts = requests.filter((r) => !repeats.has(r));
  const byDocument = new Map<string, Addition<Delta<R>>[]>();
  for (const r of firsts) {
    for (const d of r.deltas) {
      const same = byDocument.get(d.id);
      if (same) same.push({ jobId: r.jobId, d });
      else byDocument.set(d.id, [{ jobId: r.jobId, d }]);
    }
  }
  try {
    await write([...byDocument.values()], now);
  } catch (err) {
    if (!isDuplicateKeyError(err)) throw err;
    await Promise.all(firsts.map((r) => alone(r, now)));
  }
  for (const r of repeats) await alone(r, now);
}

/** The guard of a round's statement for one document: none of its jobs added yet. */
export function guardOf<D extends { id: string }>(adds: readonly Addition<D>[]): Record<string, unknown> {
  return { _id: adds[0]!.d.id, ...Object.fromEntries(adds.map(({ jobId }) => [`jobs.${jobId}`, { $exists: false }])) };
}

/** A round's guarded statement for one document. */
export interface GuardedStatement<T extends Document> {
  filter: Filter<T>;
  update: UpdateFilter<T>;
}

/** A round's statements, upserting, in unordered update commands of STATEMENTS_PER_COMMAND. */
export async function writeStatements<T extends Document>(collection: Collection<T>, statements: readonly GuardedStatement<T>[]): Promise<void> {
  for (const part of chunks(statements, STATEMENTS_PER_COMMAND)) {
    await collection.bulkWrite(part.map(({ filter, update }) => ({ updateOne: { filter, update, upsert: true } })), { ordered: false });
  }
}

/**
 * One job's guarded statement on its own (after a collision in a round): true once applied,
 * false when the job was found there already (nothing of the statement applied, its removals
 * neither). A duplicate key means either the job is there already, or (MongoDB) a concurrent
 * upsert created the document first: then the guarded update now matches it.
 */
export async function writeAlone<T extends Document & { _id: string }>(collection: Collection<T>, id: string, jobId: string, { filter, update }: GuardedStatement<T>): Promise<boolean> {
  for (;;) {
    try {
      await collection.updateOne(filter, update, { upsert: true });
      return true;
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      const doc = (await collection.findOne({ _id: id } as Filter<T>, { projection: { [`jobs.${jobId}`]: 1 } })) as { jobs?: Record<string, unknown> } | null;
      if (doc?.jobs?.[jobId]) return false;
    }
  }
}
