import { randomUUID } from "node:crypto";
import { MongoBulkWriteError, MongoClient, MongoServerError, type Collection, type Db, type Document, type Filter, type FindOptions, type InferIdType, type OptionalUnlessRequiredId } from "mongodb";

/**
 * What a store extends: it keeps the service's database, so that a store declares each of its
 * collections in one line (`private readonly col = this.db.collection<Doc>("name")`).
 */
export abstract class DbStore {
  constructor(protected readonly db: Db) {}
}

/** The one way to open MongoDB: a client with sane timeouts, verified with a ping. */
export async function connectMongo(url: string): Promise<MongoClient> {
  const client = new MongoClient(url, {
    serverSelectionTimeoutMS: 5_000,
    connectTimeoutMS: 5_000,
    // Writes are retried by the driver once on a network blip; correctness still rests on
    // unique indexes, never on the retry happening or not.
    retryWrites: true,
  });
  await client.connect();
  await client.db("admin").command({ ping: 1 });
  return client;
}

export async function pingDb(db: Db, timeoutMs = 2_000): Promise<boolean> {
  try {
    await db.command({ ping: 1 }, { timeoutMS: timeoutMs });
    return true;
  } catch {
    return false;
  }
}

export function isDuplicateKeyError(err: unknown): boolean {
  if (!(err instanceof MongoServerError)) return false;
  if (err.code === 11000) return true;
  // FerretDB reports a unique index violated by an update as an internal error.
  return err.code === 1 && /UNIQUE constraint failed/.test(err.message);
}

/** An upsert that two writers race on collides on `_id` once (MongoDB): the second try updates. */
export async function upsertRetrying(write: () => Promise<unknown>): Promise<void> {
  try {
    await write();
  } catch (err) {
    if (!isDuplicateKeyError(err)) throw err;
    await write();
  }
}

/** Inserts `doc`; false, and nothing written, when a document with its unique key (its `_id` or another unique index) exists. */
export async function insertUnlessPresent<T extends Document>(col: Collection<T>, doc: OptionalUnlessRequiredId<T>): Promise<boolean> {
  try {
    await col.insertOne(doc);
    return true;
  } catch (err) {
    if (isDuplicateKeyError(err)) return false;
    throw err;
  }
}

/** Ids per findByIds read: under the 10,000 the embedded database reads through its `_id` index. */
const IDS_PER_READ = 5_000;
/** The documents MongoDB (and the embedded database) put in a find's first answer unless told. */
const FIRST_BATCH = 101;

/**
 * The documents with these `_id`s (absent ones are left out), read with `{_id: {$in}}` a few
 * thousand at a time: the one filter besides `_id` equality that the embedded database answers
 * from its index (lib/src/embedded-db.ts). A read of more ids than a first answer holds asks
 * for all its documents in it (at most as many as ids): the default first batch of 101 left a
 * list of 1,000 ids to four more round trips (`getMore`) and a cursor held open between them.
 * A shorter one is sent as before, which the embedded database's read cache answers (a user's
 * counter and window document; it keeps no answer of a find that names a batch size).
 */
export async function findByIds<T extends Document>(col: Collection<T>, ids: readonly InferIdType<T>[], options?: FindOptions): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < ids.length; i += IDS_PER_READ) {
    const some = ids.slice(i, i + IDS_PER_READ);
    const whole = some.length > FIRST_BATCH ? { batchSize: some.length } : {};
    out.push(...((await col.find({ _id: { $in: some } } as Filter<T>, { ...whole, ...options }).toArray()) as T[]));
  }
  return out;
}

/** Documents one deleteInRounds round removes (under SQLite's 32,766 variables a statement). */
const DELETE_ROUND = 10_000;

/**
 * deleteMany in rounds of at most 10,000 documents; resolves the number deleted. The embedded
 * database (FerretDB over SQLite) deletes all matched documents in one statement with one
 * variable each, and SQLite refuses more than 32,766: a single deleteMany of more fails, so a
 * retention pass over a busy day would fail every day after. Each round reads the ids of up
 * to a round's documents by `filter`, then deletes those ids, then hands them to `afterRound`
 * (what refers to the deleted documents elsewhere).
 */
export async function deleteInRounds<T extends Document>(
  col: Collection<T>,
  filter: Filter<T>,
  afterRound?: (ids: InferIdType<T>[]) => Promise<void>,
): Promise<number> {
  let deleted = 0;
  for (;;) {
    const ids = (await col.find(filter, { projection: { _id: 1 }, limit: DELETE_ROUND }).toArray()).map((d) => d._id);
    if (ids.length === 0) return deleted;
    deleted += (await col.deleteMany({ _id: { $in: ids } } as Filter<T>)).deletedCount;
    await afterRound?.(ids);
    if (ids.length < DELETE_ROUND) return deleted;
  }
}

/**
 * Documents per insert command. The embedded database holds its single writer for a whole
 * command (about 0.7 ms a document on a loaded machine): a batch of 10,000 events as one
 * command kept every other product's writes waiting 7 s; in commands of this size they wait
 * for one command at most.
 */
const INSERTS_PER_COMMAND = 100;

/** insertMany that treats duplicate keys as "already there", returning the ids it inserted. */
export async function insertIgnoringDuplicates<D extends { _id: string }>(
  collection: Collection<D>,
  docs: D[],
): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (let i = 0; i < docs.length; i += INSERTS_PER_COMMAND) {
    for (const id of await insertChunk(collection, docs.slice(i, i + INSERTS_PER_COMMAND))) inserted.add(id);
  }
  return inserted;
}

async function insertChunk<D extends { _id: string }>(collection: Collection<D>, docs: D[]): Promise<string[]> {
  try {
    await collection.insertMany(docs as never[], { ordered: false });
    return docs.map((d) => d._id);
  } catch (err) {
    if (!(err instanceof MongoBulkWriteError)) throw err;
    const errors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
    // The driver also reports a failure of the whole command (the connection closed mid-insert,
    // the server refused it) as a MongoBulkWriteError, with no write errors: then nothing is
    // known to be stored, and answering every document as inserted would lose them.
    if (errors.length === 0) throw err;
    const failed = new Set<number>();
    for (const e of errors) {
      if (e.code !== 11000) throw err;
      failed.add(e.index);
    }
    return docs.filter((_, i) => !failed.has(i)).map((d) => d._id);
  }
}

/** Where a lease document keeps its holder's token and the end of its hold. */
export interface LeaseFields {
  holder: string;
  until: string;
}

/**
 * Takes `id` for `ms` by an insert under that unique `_id`, taking over a hold that has ended;
 * returns the new holder's token, or null while someone else holds it. The insert is atomic on
 * MongoDB and on the embedded database alike, where conditional updates and findOneAndUpdate
 * are not. A hold that ended is removed only if it is still that hold, then the insert races again.
 */
export async function takeLease<D extends { _id: string }>(
  leases: Collection<D>,
  id: string,
  ms: number,
  fields: LeaseFields,
  now: () => Date = () => new Date(),
): Promise<string | null> {
  // The two field names are the caller's: the documents are handled untyped here.
  const col = leases as unknown as Collection<{ _id: string; [field: string]: unknown }>;
  const key = { _id: id };
  for (let round = 0; round < 2; round++) {
    const token = randomUUID();
    try {
      await col.insertOne({ _id: id, [fields.holder]: token, [fields.until]: new Date(now().getTime() + ms) });
      return token;
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
    const held = await col.findOne(key);
    if (!held) continue;
    if ((held[fields.until] as Date).getTime() > now().getTime()) return null;
    await col.deleteOne({ ...key, [fields.holder]: held[fields.holder] });
  }
  return null;
}
