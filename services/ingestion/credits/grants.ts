/**
 * Grants: checking one as sent, adding it once (idempotent on the caller's id), voiding it.
 * The record is written first (`credit_grants`), so a repeated id is found there; then the
 * account takes the grant in one conditional write, which also pays any overdraft.
 */
import { characters } from "@meter/lib/characters";
import { isDeepStrictEqual } from "node:util";
import { rpcError } from "@meter/lib/errors";
import { toDollars, toNano } from "@meter/rules";
import { own } from "@meter/lib/own";
import { encodeGrantKey } from "../domain/field-keys.ts";
import { MAX_LIVE_GRANTS, hourOf, type GrantKind } from "./allocate.ts";
import { accountId, grantGone, type CreditAccountDoc } from "./account.ts";
import { crossingsClosedBefore } from "../domain/retention-policy.ts";
import { changeAccounts, type CreditDeps } from "./settle.ts";
import { grantRecordId, isGrantOf, type GrantRecordDoc } from "./store.ts";
import { stateOf } from "./view.ts";

export const GRANT_BOUNDS = {
  idLength: 128,
  /** Dollars: a grant, and what an owner's live grants hold in all, stay exact to the nano-dollar both ways (rules/money.ts: 2^51 n$). */
  maxAmount: 1e6,
  maxLive: 2e6,
  descriptionLength: 1024,
  metadataBytes: 16 * 1024,
  maxPriority: 100,
} as const;

/** What a grant sent without them has (BUDGETS.md §3). */
const GRANT_DEFAULTS = { kind: "paid", priority: 50 } as const;

/** A grant as the caller sent it, before defaults. */
export interface GrantInput {
  id: string;
  amount: number;
  kind?: string;
  priority?: number;
  effectiveAt?: Date;
  expiresAt?: Date;
  description?: string;
  metadata?: Record<string, unknown>;
}

// Control characters and unpaired surrogates: an id must print and travel as UTF-8 unchanged.
const UNPRINTABLE = /[\u0000-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function requireGrantId(id: string): string {
  if (id.length < 1 || characters(id) > GRANT_BOUNDS.idLength || UNPRINTABLE.test(id)) {
    throw rpcError.invalid(`grant id must be 1-${GRANT_BOUNDS.idLength} printable characters`);
  }
  return id;
}

/** Every problem of a grant as sent, or its record. */
export function grantRecord(productId: string, owner: string, g: GrantInput, now: Date): GrantRecordDoc {
  requireGrantId(g.id);
  const problems: string[] = [];
  // At least a nano-dollar: a smaller amount is stored as 0, a grant that could never be drawn.
  if (!(Number.isFinite(g.amount) && g.amount > 0 && toNano(g.amount) >= 1 && g.amount <= GRANT_BOUNDS.maxAmount)) {
    problems.push(`amount must be a number of dollars from 0.000000001 (a nano-dollar) to ${GRANT_BOUNDS.maxAmount}`);
  }
  const kind = g.kind ?? GRANT_DEFAULTS.kind;
  if (kind !== "paid" && kind !== "promotional") problems.push(`kind must be "paid" or "promotional"`);
  const priority = g.priority ?? GRANT_DEFAULTS.priority;
  if (!(Number.isInteger(priority) && priority >= 0 && priority <= GRANT_BOUNDS.maxPriority)) {
    problems.push(`priority must be a whole number from 0 to ${GRANT_BOUNDS.maxPriority}`);
  }
  const effectiveAt = g.effectiveAt ?? now;
  if (Number.isNaN(effectiveAt.getTime())) problems.push("effective_at is not a date");
  // Against the effective_at sent: left out, it is the moment of the first sending, and a re-send
  // after the expiry is a repeat (answered as it is), while a new grant that already expired is
  // refused once it is known to be new (addGrant).
  if (g.expiresAt && g.effectiveAt && !(g.expiresAt.getTime() > g.effectiveAt.getTime())) problems.push("expires_at must be after effective_at");
  if (g.description !== undefined && characters(g.description) > GRANT_BOUNDS.descriptionLength) {
    problems.push(`description must be at most ${GRANT_BOUNDS.descriptionLength} characters`);
  }
  const metadata = g.metadata === undefined ? null : JSON.stringify(g.metadata);
  if (metadata !== null && Buffer.byteLength(metadata, "utf8") > GRANT_BOUNDS.metadataBytes) {
    problems.push(`metadata must be at most ${GRANT_BOUNDS.metadataBytes} bytes as JSON`);
  }
  if (problems.length > 0) throw rpcError.invalid(problems.join("; "));
  const amountNano = toNano(g.amount);
  return {
    _id: grantRecordId(productId, owner, g.id),
    product_id: productId,
    owner,
    grant_id: g.id,
    amount_nano: amountNano,
    kind: kind as GrantKind,
    priority,
    effective_at: effectiveAt,
    expires_at: g.expiresAt ?? null,
    description: g.description ?? null,
    metadata,
    created_at: now,
    // What the caller sent, so a repeat is told apart from another grant under the same id
    // (fields left to their defaults compare as left out, not as the time they were filled).
    sent: JSON.stringify([amountNano, g.kind ?? null, g.priority ?? null, g.effectiveAt?.getTime() ?? null, g.expiresAt?.getTime() ?? null, g.description ?? null, metadata]),
  };
}

/**
 * Whether two grants as sent (GrantRecordDoc.sent) are the same grant: a kind or priority left
 * to its default is the default written out, and metadata is compared as data (key order, `{}`
 * as none), so an auto top-up repeated by other code that spells the defaults out is a repeat.
 */
export function sameGrant(a: string, b: string): boolean {
  return a === b || isDeepStrictEqual(normalSent(a), normalSent(b));
}

function normalSent(sent: string): unknown[] {
  const [amount, kind, priority, effective, expires, description, metadata] = JSON.parse(sent) as [number, string | null, number | null, number | null, number | null, string | null, string | null];
  const data = metadata === null ? null : (JSON.parse(metadata) as unknown);
  const none = data === null || (typeof data === "object" && !Array.isArray(data) && Object.keys(data).length === 0);
  return [amount, kind ?? GRANT_DEFAULTS.kind, priority ?? GRANT_DEFAULTS.priority, effective, expires, description, none ? null : data];
}

/** What the owner's plan in force says of credits, as a grant or a void announces with. */
export interface OwnerPlan {
  /** credits_low_at in dollars; null: never. */
  lowAt: number | null;
  enabled: boolean;
}

/**
 * Adds a grant once: a new id is recorded and taken by the account; the same id with the same
 * fields again ensures only that the account took it (a request cut off before); other fields
 * are ALREADY_EXISTS. Past MAX_LIVE_GRANTS live grants the record is removed again and the
 * request refused. Returns the record and the account after.
 */
export async function addGrant(
  deps: CreditDeps,
  productId: string,
  owner: string,
  input: GrantInput,
  plan: OwnerPlan,
): Promise<{ record: GrantRecordDoc; account: CreditAccountDoc | null; created: boolean }> {
  const now = deps.now();
  let record = grantRecord(productId, owner, input, now);
  const created = await deps.credits.insertGrant(record);
  if (!created) {
    const existing = await deps.credits.grant(record._id);
    if (!existing) throw rpcError.unavailable("the grant is being removed by another request; retry");
    if (!isGrantOf(existing, owner, input.id)) {
      throw rpcError.alreadyExists(
        `grant id "${input.id}" cannot be used for this owner: another user's or team's grant has the same key (owner and grant id joined by "|"); send another grant id`,
      );
    }
    if (!sameGrant(existing.sent, record.sent)) {
      throw rpcError.alreadyExists(`grant "${input.id}" exists with other fields; a repeated grant id must carry the same amount, kind, priority, dates, description and metadata`);
    }
    record = existing;
  }
  // A new grant that expired before it was given could never be drawn; taken, its expiry would
  // announce credits.expired, and a fall of a balance it was never part of. (A re-sent one is answered as it is.)
  if (created && record.expires_at && record.expires_at.getTime() <= now.getTime()) {
    await deps.credits.deleteGrant(record._id);
    throw rpcError.invalid("expires_at has passed: the grant could never be drawn");
  }
  const id = accountId(productId, owner);
  if (record.status) return { record, account: await deps.credits.account(id), created };
  // Listed and registered for expiry before the account holds it: whatever holds it is found.
  await deps.credits.indexGrant(productId, owner, record.grant_id);
  if (record.expires_at) await deps.credits.registerExpiry(id, hourOf(Math.max(record.expires_at.getTime(), now.getTime())));
  let refused: string | false = false;
  // Periods ended before this draw nothing (settle.ts).
  const cut = crossingsClosedBefore(now, deps.retention);
  const after = await changeAccounts(
    deps,
    new Map([[id, { productId, owner, ...plan }]]),
    (_, c) => {
      refused = false;
      // Held, or already left the account (made final after this request read the record): added once.
      if (own(c.doc.grants, encodeGrantKey(record.grant_id)) || grantGone(c.doc, encodeGrantKey(record.grant_id))) return;
      const live = Object.values(c.doc.grants).filter((g) => !g.final);
      if (live.length >= MAX_LIVE_GRANTS) {
        refused = `at most ${MAX_LIVE_GRANTS} live grants per owner (pending or active); void or wait for some to be spent or expire`;
        return;
      }
      const held = live.reduce((sum, g) => sum + g.remaining_nano, 0);
      if (held + record.amount_nano > toNano(GRANT_BOUNDS.maxLive)) {
        refused = `live grants may hold at most $${GRANT_BOUNDS.maxLive} in all (exact to the nano-dollar); this one would bring them to $${toDollars(held + record.amount_nano)}`;
        return;
      }
      c.addGrant(stateOf(record), cut);
    },
  );
  if (refused) {
    // Listed above, but never taken: out of the listing again (refused ids took the newest places of the listing).
    if (created) await Promise.all([deps.credits.deleteGrant(record._id), deps.credits.unindexGrant(productId, owner, record.grant_id)]);
    throw rpcError.conflict(refused);
  }
  const account = after.get(id) ?? null;
  // Spent whole on an overdraft, the grant left the account for its record (final): answered as stored.
  if (!own(account?.grants, encodeGrantKey(record.grant_id))) record = (await deps.credits.grant(record._id)) ?? record;
  return { record, account, created };
}

/**
 * What is left of a grant goes to 0; a grant already final (voided, expired, depleted) is
 * answered as it is. NOT_FOUND for an id the owner never had.
 */
export async function voidGrant(
  deps: CreditDeps,
  productId: string,
  owner: string,
  grantId: string,
  plan: OwnerPlan,
): Promise<{ record: GrantRecordDoc; account: CreditAccountDoc | null }> {
  requireGrantId(grantId);
  const found = await deps.credits.grant(grantRecordId(productId, owner, grantId));
  const record = found && isGrantOf(found, owner, grantId) ? found : null;
  if (!record) throw rpcError.notFound(`grant "${grantId}" not found`);
  const id = accountId(productId, owner);
  if (record.status) return { record, account: await deps.credits.account(id) };
  const cut = crossingsClosedBefore(deps.now(), deps.retention);
  const after = await changeAccounts(
    deps,
    new Map([[id, { productId, owner, ...plan }]]),
    (_, c) => {
      const key = encodeGrantKey(grantId);
      // Made final after this request read the record: nothing left to void.
      if (grantGone(c.doc, key)) return;
      // A grant recorded by a request cut off before its account took it: taken, then voided.
      if (!own(c.doc.grants, key)) c.addGrant(stateOf(record), cut);
      c.voidGrant(grantId);
    },
  );
  return { record: (await deps.credits.grant(record._id)) ?? record, account: after.get(id) ?? null };
}
