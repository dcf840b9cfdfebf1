import { BSON, MongoBulkWriteError, type AnyBulkWriteOperation, type Collection, type Db } from "mongodb";
import { findByIds, isDuplicateKeyError } from "@meter/lib/mongo";
import type { FinalStatus, GrantKind } from "./allocate.ts";
import type { AccountWrite, CreditAccountDoc, LedgerOp } from "./account.ts";

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
 * An account as stored: the whole state as one Extended JSON string beside its version. The
 * embedded database decodes nested documents far slower than one string (as for outbox
 * entries), and every settle reads and writes a user's account whole anyway.
 */
interface StoredAccount {
  _id: string;
  product_id: string;
  owner: string;
  version: number;
  state: string;
}

function fromStored(s: StoredAccount): CreditAccountDoc {
  return { ...(BSON.EJSON.parse(s.state) as CreditAccountDoc), _id: s._id, product_id: s.product_id, owner: s.owner, version: s.version };
}

function toState(a: CreditAccountDoc): string {
  const { _id, product_id, owner, version, ...state } = a;
  return BSON.EJSON.stringify(state);
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

/** Statements per write command: the embedded database holds its one writer for a whole command. */
const STATEMENTS_PER_COMMAND = 200;

export function grantRecordId(productId: string, owner: string, grantId: string): string {
  return `${productId}|${owner}|${grantId}`;
}

export function ledgerDayId(productId: string, owner: string, day: number): string {
  return `${productId}|${owner}|${day}`;
}

export class CreditStore {
  readonly accounts: Collection<StoredAccount>;
  readonly grants: Collection<GrantRecordDoc>;
  readonly ledger: Collection<LedgerDayDoc>;
  readonly index: Collection<CreditIndexDoc>;
  readonly expiries: Collection<ExpiryDoc>;

  constructor(db: Db) {
    this.accounts = db.collection<StoredAccount>("credit_accounts");
    this.grants = db.collection<GrantRecordDoc>("credit_grants");
    this.ledger = db.collection<LedgerDayDoc>("credit_ledger");
    this.index = db.collection<CreditIndexDoc>("credit_index");
    this.expiries = db.collection<ExpiryDoc>("credit_expiries");
  }

  async account(id: string): Promise<CreditAccountDoc | null> {
    const s = await this.accounts.findOne({ _id: id });
    return s && fromStored(s);
  }

  /** The accounts that exist among `ids`: one read by `_id` list. */
  async accountsOf(ids: readonly string[]): Promise<Map<string, CreditAccountDoc>> {
    if (ids.length === 0) return new Map();
    return new Map((await findByIds(this.accounts, ids)).map((a) => [a._id, fromStored(a)]));
  }

  /**
   * Applies conditional writes (each `{_id, version}`; an insert for a new account) in unordered
   * commands. Resolves true when every one applied; false when some met another writer (a
   * version moved, an account inserted meanwhile): the caller reads again and recomputes, which
   * finds nothing left to do for those that applied.
   */
  async apply(writes: readonly AccountWrite[]): Promise<boolean> {
    let all = true;
    for (let i = 0; i < writes.length; i += STATEMENTS_PER_COMMAND) {
      const part = writes.slice(i, i + STATEMENTS_PER_COMMAND);
      const ops: AnyBulkWriteOperation<StoredAccount>[] = part.map((w) => {
        const stored = storedAccount(w.after);
        return w.version === 0
          ? { insertOne: { document: stored } }
          : { updateOne: { filter: { _id: w.id, version: w.version }, update: { $set: { state: stored.state, version: stored.version } } } };
      });
      try {
        const res = await this.accounts.bulkWrite(ops, { ordered: false });
        if (res.insertedCount + res.matchedCount < part.length) all = false;
      } catch (err) {
        if (!(err instanceof MongoBulkWriteError) && !isDuplicateKeyError(err)) throw err;
        all = false;
      }
    }
    return all;
  }

  /** Inserts a grant's record; false when one with that id exists. */
  async insertGrant(doc: GrantRecordDoc): Promise<boolean> {
    try {
      await this.grants.insertOne(doc);
      return true;
    } catch (err) {
      if (isDuplicateKeyError(err)) return false;
      throw err;
    }
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

  /**
   * Has the expiry sweep look at an account in the hour of `at` (and the cursor no later than that
   * hour): written before the grant, so a grant the account holds is always found at its expiry.
   */
  async registerExpiry(accountId: string, hour: number): Promise<void> {
    await upsertRetrying(() => this.expiries.updateOne({ _id: String(hour) }, { $addToSet: { accounts: accountId } }, { upsert: true }));
    await upsertRetrying(() => this.expiries.updateOne({ _id: "cursor" }, { $min: { hour } }, { upsert: true }));
  }
}

/** An upsert that two writers race on collides on `_id` once; the second try updates. */
export async function upsertRetrying(write: () => Promise<unknown>): Promise<void> {
  try {
    await write();
  } catch (err) {
    if (!isDuplicateKeyError(err)) throw err;
    await write();
  }
}
