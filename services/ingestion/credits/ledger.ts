/**
 * The ledger (`credit_ledger`) and the hand-over of credit webhooks: copying what an account
 * holds that is not yet written elsewhere (ledger entries, webhooks, final grants), and reading
 * the ledger a page at a time.
 */
import type { AnyBulkWriteOperation } from "mongodb";
import { isDuplicateKeyError } from "@meter/lib/mongo";
import { rpcError } from "@meter/lib/errors";
import { toDollars } from "@meter/rules";
import { entry, type OutboxStore } from "../store/outbox.ts";
import type { CreditAccountDoc, LedgerOp, Notice } from "./account.ts";
import { ownerUserId } from "./account.ts";
import { grantRecordId, ledgerHourId, type CreditStore, type LedgerHourDoc } from "./store.ts";
import { encodeKey } from "../domain/field-keys.ts";

export interface FlushDeps {
  credits: CreditStore;
  outbox: Pick<OutboxStore, "put" | "webhooks">;
  now(): Date;
}

const HOUR_MS = 3_600_000;

/**
 * How long after its hour a usage entry is copied out and dropped from the account. Until then
 * usage of that hour is still added to it (a replica's clock may lag), and the entry is copied
 * as a whole amount, never as an increment, so copying it again (after a crash, or while it
 * grows) writes the right sum.
 */
export const HOURLY_SETTLED_AFTER_MS = 5 * 60_000;

const hourly = (op: LedgerOp) => op.type === "usage" || op.type === "overdraft";

/** A usage entry whose hour is over (it no longer grows): written and dropped from the account. */
function settledHour(op: LedgerOp, now: number): boolean {
  return op.hour + HOUR_MS + HOURLY_SETTLED_AFTER_MS <= now;
}

/** The field of an entry in its hour's document. */
function entryKey(op: LedgerOp): string {
  return `${op.type}|${encodeKey(op.grant_id ?? "-")}`;
}

/** A credit webhook as the outbox keeps it (relay/handover.ts sends it). */
export interface NoticePayload {
  id: string;
  product_id: string;
  user_id: string;
  type: string;
  balance: number;
  low_at: number | null;
  grant_id: string | null;
  amount: number | null;
  at: Date;
}

function noticePayload(n: Notice): NoticePayload {
  return {
    id: n.id,
    product_id: n.product_id,
    user_id: ownerUserId(n.owner),
    type: n.type,
    balance: toDollars(n.balance_nano),
    low_at: n.low_at,
    grant_id: n.grant_id,
    amount: n.amount_nano === null ? null : toDollars(n.amount_nano),
    at: n.at,
  };
}

/** Whether an account holds something to copy out (`all`: current usage entries too). */
export function hasPending(a: CreditAccountDoc, now: number, all = false): boolean {
  return (
    Object.keys(a.notices ?? {}).length > 0 ||
    Object.values(a.grants).some((g) => g.final) ||
    Object.values(a.ops ?? {}).some((op) => all || !hourly(op) || settledHour(op, now))
  );
}

/**
 * Copies out what the accounts hold: ledger entries (every one with `all`, else those of other
 * types and usage of hours that are over), webhooks to the outbox, final grants to their
 * records; then drops from each account what no longer changes, conditionally on the version
 * read (a miss leaves them for the next flush, which writes the same again). A constant number
 * of commands however many accounts.
 */
export async function flush(deps: FlushDeps, accounts: readonly CreditAccountDoc[], all = false): Promise<void> {
  const now = deps.now().getTime();
  const ledgerWrites: AnyBulkWriteOperation<LedgerHourDoc>[] = [];
  const hoursByIndex = new Map<string, Set<number>>();
  const notices: Notice[] = [];
  const finals: AnyBulkWriteOperation<import("./store.ts").GrantRecordDoc>[] = [];
  const cleanups: AnyBulkWriteOperation<CreditAccountDoc>[] = [];
  for (const a of accounts) {
    if (!hasPending(a, now, all)) continue;
    const unset: Record<string, ""> = {};
    for (const [key, op] of Object.entries(a.ops ?? {})) {
      const done = !hourly(op) || settledHour(op, now);
      if (!done && !all) continue;
      const id = ledgerHourId(a.product_id, a.owner, op.hour);
      ledgerWrites.push({
        updateOne: {
          filter: { _id: id },
          update: { $set: { [`e.${entryKey(op)}`]: op, product_id: a.product_id, owner: a.owner, hour: new Date(op.hour) } } as never,
          upsert: true,
        },
      });
      const idx = `${a.product_id}|${a.owner}`;
      if (!hoursByIndex.has(idx)) hoursByIndex.set(idx, new Set());
      hoursByIndex.get(idx)!.add(op.hour);
      if (done) unset[`ops.${key}`] = "";
    }
    for (const [key, n] of Object.entries(a.notices ?? {})) {
      notices.push(n);
      unset[`notices.${key}`] = "";
    }
    for (const [key, g] of Object.entries(a.grants)) {
      if (!g.final) continue;
      finals.push({
        updateOne: {
          filter: { _id: grantRecordId(a.product_id, a.owner, g.id) },
          update: { $set: { status: g.final, final_at: g.final_at ?? new Date(now), lost_nano: g.lost_nano ?? 0 } },
        },
      });
      unset[`grants.${key}`] = "";
    }
    if (Object.keys(unset).length > 0) cleanups.push({ updateOne: { filter: { _id: a._id, version: a.version }, update: { $unset: unset } as never } });
  }
  await bulkRetrying(() => deps.credits.ledger, ledgerWrites);
  await bulkRetrying(
    () => deps.credits.index,
    [...hoursByIndex].map(([id, hours]) => ({
      updateOne: { filter: { _id: id }, update: { $addToSet: { hours: { $each: [...hours] } } }, upsert: true },
    })),
  );
  if (notices.length > 0) await deps.outbox.put(deps.outbox.webhooks, notices.map((n) => entry("credits", n.id, [{ ...noticePayload(n) }])));
  // Records first: a grant leaves the account only once its record says it is final.
  await bulkRetrying(() => deps.credits.grants, finals);
  await bulkRetrying(() => deps.credits.accounts, cleanups);
}

/** Unordered bulk writes in commands of 200; an upsert that raced another collides once, then the retry updates. */
async function bulkRetrying<T extends import("mongodb").Document>(
  col: () => import("mongodb").Collection<T>,
  ops: AnyBulkWriteOperation<T>[],
): Promise<void> {
  for (let i = 0; i < ops.length; i += 200) {
    const part = ops.slice(i, i + 200);
    try {
      await col().bulkWrite(part, { ordered: false });
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      await col().bulkWrite(part, { ordered: false });
    }
  }
}

/** One ledger entry as answered (money in nano-dollars). */
export interface LedgerEntry {
  at: Date;
  type: LedgerOp["type"];
  amount_nano: number;
  grant_id: string | null;
  balance_after_nano: number;
}

const TYPE_ORDER: Record<string, number> = { expiry: 0, void: 1, grant: 2, overdraft: 3, usage: 4 };

function newestFirst(a: LedgerOp, b: LedgerOp): number {
  const d = b.at.getTime() - a.at.getTime();
  if (d !== 0) return d;
  const t = (TYPE_ORDER[a.type] ?? 9) - (TYPE_ORDER[b.type] ?? 9);
  if (t !== 0) return t;
  return (a.grant_id ?? "") < (b.grant_id ?? "") ? -1 : (a.grant_id ?? "") > (b.grant_id ?? "") ? 1 : 0;
}

/** Hour documents read per round of a page. */
const HOURS_PER_READ = 48;

/**
 * A page of an owner's ledger, newest first: the owner's hours from its index (no scan), their
 * documents read by `_id`, and the entries the account holds that are not written yet laid over
 * them (an account's entry is the whole amount, so it replaces the written one). The cursor is
 * `<hour ms>:<entries of that hour already given>`.
 */
export async function listLedger(
  deps: Pick<FlushDeps, "credits">,
  productId: string,
  owner: string,
  limit: number,
  cursor: string | undefined,
): Promise<{ entries: LedgerEntry[]; next: string | undefined }> {
  let fromHour = Infinity;
  let skip = 0;
  if (cursor !== undefined) {
    const m = /^(\d{1,16}):(\d{1,9})$/.exec(cursor);
    if (!m) throw rpcError.invalid("cursor is not one this service gave");
    fromHour = Number(m[1]);
    skip = Number(m[2]);
  }
  const [index, account] = await Promise.all([deps.credits.indexOf(productId, owner), deps.credits.account(`${productId}|${owner}`)]);
  const pendingByHour = new Map<number, LedgerOp[]>();
  for (const op of Object.values(account?.ops ?? {})) {
    if (!pendingByHour.has(op.hour)) pendingByHour.set(op.hour, []);
    pendingByHour.get(op.hour)!.push(op);
  }
  const hours = [...new Set([...(index?.hours ?? []), ...pendingByHour.keys()])].filter((h) => h <= fromHour).sort((a, b) => b - a);
  const entries: LedgerEntry[] = [];
  let next: string | undefined;
  for (let i = 0; i < hours.length && next === undefined; i += HOURS_PER_READ) {
    const part = hours.slice(i, i + HOURS_PER_READ);
    const docs = new Map((await deps.credits.ledger.find({ _id: { $in: part.map((h) => ledgerHourId(productId, owner, h)) } }).toArray()).map((d) => [d.hour.getTime(), d]));
    for (const h of part) {
      const byKey = new Map<string, LedgerOp>();
      for (const op of Object.values(docs.get(h)?.e ?? {})) byKey.set(entryKey(op), op);
      for (const op of pendingByHour.get(h) ?? []) byKey.set(entryKey(op), op);
      const list = [...byKey.values()].filter((op) => op.amount_nano !== 0 || op.type === "grant").sort(newestFirst);
      const from = h === fromHour ? skip : 0;
      for (let j = from; j < list.length; j++) {
        if (entries.length === limit) {
          next = `${h}:${j}`;
          break;
        }
        const op = list[j]!;
        entries.push({ at: op.at, type: op.type, amount_nano: op.amount_nano, grant_id: op.grant_id, balance_after_nano: op.balance_after_nano });
      }
      if (next !== undefined) break;
    }
  }
  return { entries, next };
}
