import { MongoClient, MongoServerError, type Db } from "mongodb";

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
