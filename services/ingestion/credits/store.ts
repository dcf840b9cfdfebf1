import { MongoBulkWriteError, type AnyBulkWriteOperation } from "mongodb";
import { LRUCache } from "lru-cache";
import { DbStore, findByIds, insertUnlessPresent, isDuplicateKeyError, upsertRetrying } from "@meter/lib/mongo";
import { fromDatedJson, toDatedJson } from "@meter/lib/dated-json";
import type { FinalStatus, GrantKind } from "./allocate.ts";
import type { AccountWrite, CreditAccountDoc, LedgerOp } from "./account.ts";
import { chunks, STATEMENTS_PER_COMMAND } from "../store/commands.ts";

/** The full record of one grant (`credit_grants`), written before the account takes the grant. */
export interface GrantRecordDoc {
  /** "<product>|<owner>|<grant id>" */
  _id: string;
  product_id: string;
  owner: string;
  grant_id: string;
  amount_nano: number;
  kind: GrantKind;
  priority: number;
  effective_at: Date;
  expires_at: Date | null;
  description: string | null;
  /** JSON text of the caller's metadata (any key goes), null without. */
  metadata: string | null;
  created_at: Date;
  /** The fields as the caller sent them (JSON): a repeat with the same is a no-op, with others 409. */
  sent: string;
  /** Set once the grant is final and the account no longer holds it. */
  status?: FinalStatus;
  final_at?: Date;
  lost_nano?: number;
}

/**
 * The ledger of one owner in one UTC day (`credit_ledger`): its entries by `<hour ms>|<type>|<grant>`
 * (usage summed per grant and hour).
 */
export interface LedgerDayDoc {
  /** "<product>|<owner>|<day ms>" */
  _id: string;
  product_id: string;
  owner: string;
  day: Date;
  e: Record<string, LedgerOp>;
}

/** What a listing finds without a scan (`credit_index`, "<product>|<owner>"): grant ids and ledger days. */
export interface CreditIndexDoc {
  _id: string;
  grants?: string[];
  days?: number[];
}

/**
 * An account as stored: the whole state as one string (`@meter/lib/dated-json`; accounts written
 * before it hold Extended JSON, which it reads) beside its version. The embedded database decodes
 * nested documents far slower than one string (as for outbox entries), and every settle reads
 * and writes a user's account whole anyway.
 */
interface StoredAccount {
  _id: string;
  product_id: string;
  owner: string;
  version: number;
  state: string;
}

function fromStored(s: StoredAccount): CreditAccountDoc {
  return { ...fromDatedJson<CreditAccountDoc>(s.state), _id: s._id, product_id: s.product_id, owner: s.owner, version: s.version };
}

function toState(a: CreditAccountDoc): string {
  const { _id, product_id, owner, version, ...state } = a;
  return toDatedJson(state);
}

/** An account as stored (bench seeding writes accounts this way). */
export function storedAccount(a: CreditAccountDoc): StoredAccount {
  return { _id: a._id, product_id: a.product_id, owner: a.owner, version: a.version, state: toState(a) };
}

/** Accounts with a grant expiring in one UTC hour (`credit_expiries`, "<hour ms>"), and the sweep's cursor ("cursor"). */
export interface ExpiryDoc {
  _id: string;
  accounts?: string[];
  hour?: number;
}

/**
 * Accounts this process last read or wrote, by id. A settle computes from the cached account
 * and writes conditionally on its version, so the cache is never trusted: a write another
 * process (or request) made meanwhile makes the write miss, and the account is read again.
 * Spares a read of every account a batch settles.
 */
const CACHED_ACCOUNTS = 20_000;

export function grantRecordId(productId: string, owner: string, grantId: string): string {
  return `${productId}|${owner}|${grantId}`;
}

/**
 * Whether the record under a grant's key is that owner's grant of that id: owner and grant id
 * are joined by "|", which both may hold, so user "a" with grant "b|c" and user "a|b" with
 * grant "c" meet on one key. The key stays the first one's; the other is refused (grants.ts).
 */
export function isGrantOf(record: GrantRecordDoc, owner: string, grantId: string): boolean {
  return record.owner === owner && record.grant_id === grantId;
}

export function ledgerDayId(productId: string, owner: string, day: number): string {
  return `${productId}|${owner}|${day}`;
}

export class CreditStore extends DbStore {
  readonly accounts = this.db.collection<StoredAccount>("credit_accounts");
  readonly grants = this.db.collection<GrantRecordDoc>("credit_grants");
  readonly ledger = this.db.collection<LedgerDayDoc>("credit_ledger");
  readonly index = this.db.collection<CreditIndexDoc>("credit_index");
  readonly expiries = this.db.collection<ExpiryDoc>("credit_expiries");
  private readonly cache = new LRUCache<string, CreditAccountDoc>({ max: CACHED_ACCOUNTS });

  async account(id: string): Promise<CreditAccountDoc | null> {
    const s = await this.accounts.findOne({ _id: id });
    const a = s && fromStored(s);
    if (a) this.cache.set(id, a);
    return a;
  }

  /**
   * The accounts that exist among `ids`: one read by `_id` list (with `cached`, of those this
   * process does not hold; see CACHED_ACCOUNTS). Callers never change what they get.
   */
  async accountsOf(ids: readonly string[], cached = false): Promise<Map<string, CreditAccountDoc>> {
    const out = new Map<string, CreditAccountDoc>();
    const read = cached ? ids.filter((id) => !this.cache.has(id)) : ids;
    if (cached) for (const id of ids) if (this.cache.has(id)) out.set(id, this.cache.get(id)!);
    if (read.length > 0) {
      for (const s of await findByIds(this.accounts, read)) {
        const a = fromStored(s);
        this.cache.set(a._id, a);
        out.set(a._id, a);
      }
    }
    return out;
  }

  /** The copies this process holds of the accounts among `ids` (no read): what accountsOf with `cached` would take of them now. */
  held(ids: readonly string[]): Map<string, CreditAccountDoc> {
    const out = new Map<string, CreditAccountDoc>();
    for (const id of ids) {
      const a = this.cache.get(id);
      if (a) out.set(id, a);
    }
    return out;
  }

  /**
   * Applies conditional writes (each `{_id, version}`; an insert for a new account) in unordered
   * commands. Resolves true when every one applied; false when some met another writer (a
   * version moved, an account inserted meanwhile): the caller reads again and recomputes, which
   * finds nothing left to do for those that applied.
   */
  async apply(writes: readonly AccountWrite[]): Promise<boolean> {
    let all = true;
    for (const part of chunks(writes, STATEMENTS_PER_COMMAND)) {
      const ops: AnyBulkWriteOperation<StoredAccount>[] = part.map((w) => {
        const stored = storedAccount(w.after);
        return w.version === 0
          ? { insertOne: { document: stored } }
          : { updateOne: { filter: { _id: w.id, version: w.version }, update: { $set: { state: stored.state, version: stored.version } } } };
      });
      let applied = false;
      try {
        const res = await this.accounts.bulkWrite(ops, { ordered: false });
        applied = res.insertedCount + res.matchedCount === part.length;
      } catch (err) {
        if (!(err instanceof MongoBulkWriteError) && !isDuplicateKeyError(err)) throw err;
      }
      // Which ones missed is not told: those are read again.
      for (const w of part) {
        if (applied) this.cache.set(w.id, w.after);
        else this.cache.delete(w.id);
      }
      if (!applied) all = false;
    }
    return all;
  }

  /** Inserts a grant's record; false when one with that id exists. */
  insertGrant(doc: GrantRecordDoc): Promise<boolean> {
    return insertUnlessPresent(this.grants, doc);
  }

  async grant(id: string): Promise<GrantRecordDoc | null> {
    return this.grants.findOne({ _id: id });
  }

  async grantsOf(ids: readonly string[]): Promise<GrantRecordDoc[]> {
    return findByIds(this.grants, ids);
  }

  async deleteGrant(id: string): Promise<void> {
    await this.grants.deleteOne({ _id: id });
  }

  async indexOf(productId: string, owner: string): Promise<CreditIndexDoc | null> {
    return this.index.findOne({ _id: `${productId}|${owner}` });
  }

  /** Lists a grant id with its owner (idempotent). */
  async indexGrant(productId: string, owner: string, grantId: string): Promise<void> {
    await upsertRetrying(() => this.index.updateOne({ _id: `${productId}|${owner}` }, { $addToSet: { grants: grantId } }, { upsert: true }));
  }

  /** Takes a grant id out of the owner's index again (a grant refused after it was listed). */
  async unindexGrant(productId: string, owner: string, grantId: string): Promise<void> {
    await this.index.updateOne({ _id: `${productId}|${owner}` }, { $pull: { grants: grantId } });
  }

  /**
   * Has the expiry sweep look at an account in the hour of `at` (and the cursor no later than that
   * hour): written before the grant, so a grant the account holds is always found at its expiry.
   */
  async registerExpiry(accountId: string, hour: number): Promise<void> {
    await upsertRetrying(() => this.expiries.updateOne({ _id: String(hour) }, { $addToSet: { accounts: accountId } }, { upsert: true }));
    await upsertRetrying(() => this.expiries.updateOne({ _id: "cursor" }, { $min: { hour } }, { upsert: true }));
  }
}
