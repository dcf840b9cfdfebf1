/**
 * The ledger (`credit_ledger`) and the hand-over of credit webhooks: copying what an account
 * holds that is not yet written elsewhere (ledger entries, webhooks, final grants), and reading
 * the ledger a page at a time.
 */
import type { AnyBulkWriteOperation, Collection, Document } from "mongodb";
import { upsertRetrying } from "@meter/lib/mongo";
import { rpcError } from "@meter/lib/errors";
import { toDollars } from "@meter/rules";
import { entry, type OutboxStore } from "../store/outbox.ts";
import { isHourly, ownerTeamId, ownerUserId, type CreditAccountDoc, type LedgerOp, type Notice, type Settled } from "./account.ts";
import { grantRecordId, ledgerDayId, type CreditStore, type GrantRecordDoc, type LedgerDayDoc } from "./store.ts";
import { encodeGrantKey } from "../domain/field-keys.ts";

export interface FlushDeps {
  credits: CreditStore;
  outbox: Pick<OutboxStore, "put" | "webhooks">;
  now(): Date;
}

const DAY_MS = 86_400_000;
const dayOf = (hour: number) => hour - (hour % DAY_MS);

/** The field of an entry in its day's document. */
function entryKey(op: LedgerOp): string {
  return `${op.hour}|${op.type}|${encodeGrantKey(op.grant_id ?? "-")}`;
}

/** A credit webhook as the outbox keeps it (relay/handover.ts sends it). */
export interface NoticePayload {
  id: string;
  product_id: string;
  /** The user's external id; absent for a team's pool (team_id instead). */
  user_id?: string;
  team_id?: string;
  type: string;
  balance: number;
  low_at: number | null;
  grant_id: string | null;
  amount: number | null;
  at: Date;
}

/** Who a webhook names: the user, or the team whose pool it is. */
function ownerIds(owner: string): { user_id: string } | { team_id: string } {
  const team = ownerTeamId(owner);
  return team === null ? { user_id: ownerUserId(owner) } : { team_id: team };
}

function noticePayload(n: Notice): NoticePayload {
  return {
    id: n.id,
    product_id: n.product_id,
    ...ownerIds(n.owner),
    type: n.type,
    balance: toDollars(n.balance_nano),
    low_at: n.low_at,
    grant_id: n.grant_id,
    amount: n.amount_nano === null ? null : toDollars(n.amount_nano),
    at: n.at,
  };
}

/**
 * Writes what accounts are about to drop (AccountChange.takeSettled): ledger entries into their
 * day's document (and the day into the owner's index), webhooks into the outbox, final grants
 * into their records. Every write states a whole value, so writing it again (a write of the
 * account that missed, a crash) changes nothing. A constant number of commands however many
 * accounts.
 */
export async function writeSettled(deps: FlushDeps, items: readonly { account: CreditAccountDoc; settled: Settled }[]): Promise<void> {
  const ledgerWrites: AnyBulkWriteOperation<LedgerDayDoc>[] = [];
  const daysByIndex = new Map<string, Set<number>>();
  const notices: Notice[] = [];
  const finals: AnyBulkWriteOperation<GrantRecordDoc>[] = [];
  for (const { account: a, settled } of items) {
    const byDay = new Map<number, Record<string, LedgerOp>>();
    for (const op of settled.ops) {
      const day = dayOf(op.hour);
      if (!byDay.has(day)) byDay.set(day, {});
      byDay.get(day)![`e.${entryKey(op)}`] = op;
    }
    for (const [day, set] of byDay) {
      ledgerWrites.push({
        updateOne: {
          filter: { _id: ledgerDayId(a.product_id, a.owner, day) },
          update: { $set: { ...set, product_id: a.product_id, owner: a.owner, day: new Date(day) } } as never,
          upsert: true,
        },
      });
      const idx = `${a.product_id}|${a.owner}`;
      if (!daysByIndex.has(idx)) daysByIndex.set(idx, new Set());
      daysByIndex.get(idx)!.add(day);
    }
    notices.push(...settled.notices);
    for (const g of settled.finals) {
      finals.push({
        updateOne: {
          filter: { _id: grantRecordId(a.product_id, a.owner, g.id), owner: a.owner, grant_id: g.id },
          update: { $set: { status: g.final!, final_at: g.final_at ?? deps.now(), lost_nano: g.lost_nano ?? 0 } },
        },
      });
    }
  }
  await bulkRetrying(deps.credits.ledger, ledgerWrites);
  await bulkRetrying(
    deps.credits.index,
    [...daysByIndex].map(([id, days]) => ({ updateOne: { filter: { _id: id }, update: { $addToSet: { days: { $each: [...days] } } }, upsert: true } })),
  );
  if (notices.length > 0) await deps.outbox.put(deps.outbox.webhooks, notices.map((n) => entry("credits", n.id, [{ ...noticePayload(n) }])));
  await bulkRetrying(deps.credits.grants, finals);
}

/** Unordered bulk writes in commands of 200; an upsert that raced another collides once, then the retry updates. */
async function bulkRetrying<T extends Document>(col: Collection<T>, ops: AnyBulkWriteOperation<T>[]): Promise<void> {
  for (let i = 0; i < ops.length; i += 200) {
    const part = ops.slice(i, i + 200);
    await upsertRetrying(() => col.bulkWrite(part, { ordered: false }));
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

function newestFirst(a: Pick<LedgerOp, "at" | "type" | "grant_id">, b: Pick<LedgerOp, "at" | "type" | "grant_id">): number {
  const d = b.at.getTime() - a.at.getTime();
  if (d !== 0) return d;
  const t = (TYPE_ORDER[a.type] ?? 9) - (TYPE_ORDER[b.type] ?? 9);
  if (t !== 0) return t;
  return (a.grant_id ?? "") < (b.grant_id ?? "") ? -1 : (a.grant_id ?? "") > (b.grant_id ?? "") ? 1 : 0;
}

/** Day documents read per round of a page. */
const DAYS_PER_READ = 16;

/**
 * A page of an owner's ledger, newest first: the owner's days from its index (no scan), their
 * documents read by `_id`, and the entries the account still holds laid over them (an entry is a
 * whole amount, so the account's replaces the written one). The cursor names the last entry
 * given, `<day ms>:<at ms>:<type>:<grant id, base64url>`, and the next page starts after it in
 * this order: entries added meanwhile (today's, at the top) shift nothing, so none is given twice.
 * (`<day ms>:<entries of that day given>`, the cursor of earlier versions, is still read.)
 */
export async function listLedger(
  deps: Pick<FlushDeps, "credits">,
  productId: string,
  owner: string,
  limit: number,
  cursor: string | undefined,
): Promise<{ entries: LedgerEntry[]; next: string | undefined }> {
  let fromDay = Infinity;
  let skip = 0;
  let after: Pick<LedgerOp, "at" | "type" | "grant_id"> | undefined;
  if (cursor !== undefined) {
    const last = /^(\d{1,16}):(\d{1,16}):(expiry|void|grant|overdraft|usage):([A-Za-z0-9_-]{0,1400})$/.exec(cursor);
    const counted = /^(\d{1,16}):(\d{1,9})$/.exec(cursor);
    if (last) {
      fromDay = Number(last[1]);
      after = { at: new Date(Number(last[2])), type: last[3] as LedgerOp["type"], grant_id: Buffer.from(last[4]!, "base64url").toString() || null };
    } else if (counted) {
      fromDay = Number(counted[1]);
      skip = Number(counted[2]);
    } else throw rpcError.invalid("cursor is not one this service gave");
  }
  const [index, account] = await Promise.all([deps.credits.indexOf(productId, owner), deps.credits.account(`${productId}|${owner}`)]);
  const pendingByDay = new Map<number, LedgerOp[]>();
  for (const op of Object.values(account?.ops ?? {})) {
    const day = dayOf(op.hour);
    if (!pendingByDay.has(day)) pendingByDay.set(day, []);
    pendingByDay.get(day)!.push(op);
  }
  const days = [...new Set([...(index?.days ?? []), ...pendingByDay.keys()])].filter((d) => d <= fromDay).sort((a, b) => b - a);
  const entries: LedgerEntry[] = [];
  /** The last entry given: the cursor names its place in the listing's order. */
  let given: LedgerOp | undefined;
  let next: string | undefined;
  for (let i = 0; i < days.length && next === undefined; i += DAYS_PER_READ) {
    const part = days.slice(i, i + DAYS_PER_READ);
    const docs = new Map((await deps.credits.ledger.find({ _id: { $in: part.map((d) => ledgerDayId(productId, owner, d)) } }).toArray()).map((d) => [d.day.getTime(), d]));
    for (const d of part) {
      const byKey = new Map<string, LedgerOp>();
      for (const op of Object.values(docs.get(d)?.e ?? {})) byKey.set(entryKey(op), op);
      for (const op of pendingByDay.get(d) ?? []) byKey.set(entryKey(op), op);
      const list = [...byKey.values()].filter((op) => op.amount_nano !== 0 || op.type === "grant").sort(newestFirst);
      let from = d === fromDay ? skip : 0;
      if (d === fromDay && after) while (from < list.length && newestFirst(list[from]!, after) <= 0) from++;
      for (let j = from; j < list.length; j++) {
        if (entries.length === limit) {
          next = `${d}:${given!.at.getTime()}:${given!.type}:${Buffer.from(given!.grant_id ?? "").toString("base64url")}`;
          break;
        }
        const op = (given = list[j]!);
        entries.push({ at: isHourly(op) ? new Date(op.hour) : op.at, type: op.type, amount_nano: op.amount_nano, grant_id: op.grant_id, balance_after_nano: op.balance_after_nano });
      }
      if (next !== undefined) break;
    }
  }
  return { entries, next };
}
