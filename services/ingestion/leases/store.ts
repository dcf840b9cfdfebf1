import type { Collection } from "mongodb";
import { isDuplicateKeyError } from "@meter/lib/mongo";
import { rpcError } from "@meter/lib/errors";
import { grant, outstanding, type Grant, type LeaseEntry } from "../domain/lease-policy.ts";
import type { CounterDoc } from "../store/counters.ts";

/** Most leases (holders) one user's period may have at once. */
export const MAX_LEASES = 1_000;
/** Conditional writes tried before a grant gives up (each miss means another writer won). */
const ATTEMPTS = 50;

/** A counter as the lease store sees it: the counter plus its leases and a version. */
export interface LeasedCounter extends CounterDoc {
  leases?: Record<string, LeaseEntry>;
  version?: number;
}

export interface CounterRef {
  id: string;
  productId: string;
  userId: string;
  start: Date;
  end: Date;
}

export interface AcquireInput {
  holder: string;
  cap: number;
  need: number;
  want: number;
  ttlMs: number;
  graceMs: number;
  now: Date;
}

export interface LeaseView extends Grant {
  lease: LeaseEntry;
}

/**
 * Leases live in the period counter they draw on (`leases.<holder>`), so one single-document
 * write grants against cap - settled - outstanding: read, compute, write conditionally on
 * `version`, retry on a miss. Every counter change bumps `version` (the usage $inc too), so a
 * grant computed from a stale read never lands.
 */
export class LeaseStore {
  constructor(private readonly counters: Collection<LeasedCounter>) {}

  async acquire(ref: CounterRef, a: AcquireInput): Promise<LeaseView> {
    for (let i = 0; i < ATTEMPTS; i++) {
      const doc = (await this.counters.findOne({ _id: ref.id })) ?? (await this.create(ref));
      const now = a.now.getTime();
      const leases = doc.leases ?? {};
      const g = grant({ cap: a.cap, settled: doc.cost ?? 0, leases, holder: a.holder, need: a.need, want: a.want, now, graceMs: a.graceMs });
      const own = leases[a.holder];
      const spent = own?.spent ?? 0;
      // A lapsed lease restarts from what was settled against it; a live one grows.
      const base = own && outstanding(own, now, a.graceMs) > 0 ? Math.max(own.granted, spent) : spent;
      const lease: LeaseEntry = g.added > 0 ? { granted: base + g.added, spent, expires_at: new Date(now + a.ttlMs) } : (own ?? { granted: 0, spent: 0 });
      if (g.added === 0) return { ...g, lease };
      const unset: Record<string, ""> = {};
      for (const [id, l] of Object.entries(leases)) {
        if (id !== a.holder && (!l.expires_at || l.expires_at.getTime() + a.graceMs <= now)) unset[`leases.${id}`] = "";
      }
      if (!own && Object.keys(leases).length - Object.keys(unset).length >= MAX_LEASES) {
        throw rpcError.tooLarge(`user has ${MAX_LEASES} leases outstanding; release some or wait for them to expire`);
      }
      const update: Record<string, unknown> = {
        $set: { [`leases.${a.holder}.granted`]: lease.granted, [`leases.${a.holder}.expires_at`]: lease.expires_at },
        $inc: { version: 1, [`leases.${a.holder}.spent`]: 0 },
      };
      if (Object.keys(unset).length > 0) update.$unset = unset;
      const res = await this.counters.updateOne(versioned(doc), update);
      if (res.modifiedCount === 1) return { ...g, lease };
    }
    throw rpcError.unavailable("the user's budget is changing too fast to lease from; retry");
  }

  /** Sets the lease to what its holder spent in all: its outstanding part becomes spent-but-unsettled. */
  async release(counterId: string, holder: string, used: number): Promise<LeaseEntry | null> {
    const doc = await this.counters.findOneAndUpdate(
      { _id: counterId, [`leases.${holder}.expires_at`]: { $exists: true } },
      { $set: { [`leases.${holder}.granted`]: used }, $inc: { version: 1 } },
      { returnDocument: "after" },
    );
    return doc?.leases?.[holder] ?? null;
  }

  /** An empty counter to lease from (usage creates counters too; whoever is first wins). */
  private async create(ref: CounterRef): Promise<LeasedCounter> {
    try {
      await this.counters.updateOne(
        { _id: ref.id },
        {
          $setOnInsert: {
            product_id: ref.productId,
            user_id: ref.userId,
            period_start: ref.start,
            period_end: ref.end,
            cost: 0,
            tokens: 0,
            tool_calls: 0,
            events: 0,
            tokens_by_model: {},
            cost_by_model: {},
            jobs: [],
            version: 0,
          },
        },
        { upsert: true },
      );
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
    return (await this.counters.findOne({ _id: ref.id }))!;
  }
}

/** The filter that matches the document only as it was read. */
function versioned(doc: LeasedCounter) {
  return doc.version === undefined ? { _id: doc._id, version: { $exists: false } } : { _id: doc._id, version: doc.version };
}
