import { DbStore, deleteInRounds, takeLease } from "@meter/lib/mongo";

interface ClaimDoc {
  /** The idempotency key of the work, e.g. "deliver:<delivery id>:<attempt>". */
  _id: string;
  token: string;
  expires_at: Date;
}

/**
 * Exactly-once guard for job work. A claim is an insert under a unique _id, which is atomic on
 * MongoDB and on the embedded FerretDB alike (FerretDB v1 does not make conditional updates or
 * findOneAndUpdate atomic, so Agenda's own lock can hand one job to two workers there).
 * A claim whose holder died (lease expired without release or completion) can be taken over.
 */
export class ClaimStore extends DbStore {
  private readonly col = this.db.collection<ClaimDoc>("job_claims");

  async init(): Promise<void> {
    // Claims are only needed while their job can still run. The retention job deletes expired
    // ones on every backend; on MongoDB a TTL index also sweeps them (FerretDB has none).
    try {
      await this.col.createIndex({ expires_at: 1 }, { expireAfterSeconds: 7 * 86_400 });
    } catch (err) {
      if ((err as { code?: number }).code !== 238) throw err;
      await this.col.createIndex({ expires_at: 1 });
    }
  }

  /** Returns a token when this caller now holds the key, or null when someone else does. */
  claim(key: string, leaseMs: number, now = new Date()): Promise<string | null> {
    return takeLease(this.col, key, leaseMs, { holder: "token", until: "expires_at" }, () => now);
  }

  /**
   * When the key's current claim lapses (null: none is held). A claim whose holder died, or
   * whose insert reached the database while its answer did not, is free from then on.
   */
  async heldUntil(key: string): Promise<Date | null> {
    return (await this.col.findOne({ _id: key }, { projection: { expires_at: 1 } }))?.expires_at ?? null;
  }

  /**
   * Deletes claims past their lease. An expired claim can be taken over by anyone (see claim),
   * so it protects nothing: deleting it changes only the storage.
   */
  async sweepExpired(now: Date): Promise<number> {
    return deleteInRounds(this.col, { expires_at: { $lt: now } });
  }

  /** Gives the key back so that a retry of the job can run it. */
  async release(key: string, token: string): Promise<void> {
    await this.col.deleteOne({ _id: key, token });
  }
}
