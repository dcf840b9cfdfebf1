import type { Collection, Filter } from "mongodb";
import { isDuplicateKeyError } from "@meter/lib/mongo";
import { own } from "@meter/lib/own";
import { rpcError } from "@meter/lib/errors";
import { planSlices, type SliceAsk, type SliceGrant, type WindowLeaseEntry } from "./slices.ts";
import type { WindowDoc } from "./store.ts";
import type { WindowDocMove } from "./move.ts";

/** Conditional writes tried before a grant gives up (each miss means another writer won). */
const ATTEMPTS = 50;
/** Most leases one user's window document may hold at once (as a period counter). */
export const MAX_WINDOW_LEASES = 1_000;

export interface SliceRequest {
  holder: string;
  /** Built from the document as read: what each window has counted (see SliceAsk). */
  asks: (doc: WindowDoc) => SliceAsk[];
  ttlMs: number;
  graceMs: number;
  now: Date;
}

/** The owner of the document slices are kept in (a user's or team's window document, a team's period counter). */
export interface SliceDocRef {
  productId: string;
  userId: string;
  /** A period counter's period. */
  start?: Date;
  end?: Date;
}

/** The fields of an empty window document of a user's (or, `owner` "team_id", a team's: WindowStore's owner). */
export const emptyWindowDoc =
  (owner: "user_id" | "team_id" = "user_id") =>
  (ref: SliceDocRef) => ({ product_id: ref.productId, [owner]: ref.userId, w: {}, jobs: {}, version: 0 });

/**
 * Window slices of budget leases, in the document the window is counted in (a user's or a
 * team's window document, a team's period counter: leases/team.ts), so one single-document write grants against cap - counted - outstanding in every
 * window asked: read, compute, write conditionally on `version`, retry on a miss. Counting usage
 * not spent from a slice bumps `version` (WindowStore.add), so a grant computed from a stale
 * read never lands.
 */
export class WindowLeaseStore {
  /**
   * `windows`: the documents counting the windows (any whose `w` holds window counts, as WindowDoc
   * does, and whose `version` counting bumps); `empty`: the fields of one nothing was counted in yet;
   * `move`: what brings users' documents still kept where earlier versions kept them (windows/move.ts).
   */
  constructor(
    private readonly windows: Collection<WindowDoc>,
    private readonly empty: (ref: SliceDocRef) => Record<string, unknown> = emptyWindowDoc(),
    private readonly move?: WindowDocMove,
  ) {}

  async acquire(id: string, ref: SliceDocRef, r: SliceRequest): Promise<SliceGrant[]> {
    await this.move?.ensure([id]);
    for (let i = 0; i < ATTEMPTS; i++) {
      const doc = (await this.windows.findOne({ _id: id })) ?? (await this.create(id, ref));
      const leases = doc.leases ?? {};
      const now = r.now.getTime();
      if (!own(leases, r.holder) && Object.keys(leases).length >= MAX_WINDOW_LEASES) {
        const live = Object.values(leases).filter((l) => l.expires_at && new Date(l.expires_at).getTime() + r.graceMs > now).length;
        if (live >= MAX_WINDOW_LEASES) throw rpcError.tooLarge(`user has ${MAX_WINDOW_LEASES} leases outstanding; release some or wait for them to expire`);
      }
      const { grants, update } = planSlices(leases, r.holder, r.asks(doc), now, r.ttlMs, r.graceMs);
      if (update === null) return grants;
      const filter = (doc.version === undefined ? { _id: id, version: { $exists: false } } : { _id: id, version: doc.version }) as Filter<WindowDoc>;
      const res = await this.windows.updateOne(filter, update);
      if (res.modifiedCount === 1) return grants;
    }
    throw rpcError.unavailable("the user's windows are changing too fast to lease from; retry");
  }

  /** Sets each named slice of the holder's lease to what it used in all (in the limit's unit). Null when the document holds no such lease. */
  async release(id: string, holder: string, used: Record<string, number>): Promise<WindowLeaseEntry | null> {
    await this.move?.ensure([id]);
    const set: Record<string, number> = {};
    for (const [key, n] of Object.entries(used)) set[`leases.${holder}.s.${key}.granted`] = n;
    const doc = await this.windows.findOneAndUpdate(
      { _id: id, [`leases.${holder}.expires_at`]: { $exists: true } } as Filter<WindowDoc>,
      Object.keys(set).length > 0 ? { $set: set, $inc: { version: 1 } } : { $inc: { version: 1 } },
      { returnDocument: "after" },
    );
    return own(doc?.leases, holder) ?? null;
  }

  /** An empty window document to lease from (usage creates them too; whoever is first wins). */
  private async create(id: string, ref: SliceDocRef): Promise<WindowDoc> {
    try {
      await this.windows.updateOne({ _id: id }, { $setOnInsert: this.empty(ref) as Partial<WindowDoc> }, { upsert: true });
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
    return (await this.windows.findOne({ _id: id }))!;
  }
}
