import { Type } from "typebox";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { CreditGrant, CreditLedgerEntry, SessionCredits } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { Body, DateTime, KeyedBy, Nullable } from "./common.ts";

/** Printable characters: no control characters, no unpaired surrogates. */
const PRINTABLE = "[^\\u0000-\\u001F\\u007F\\uD800-\\uDFFF]*";

/** A grant id as it may be stored: 1-128 printable characters. */
export const StoredGrantId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: `^${PRINTABLE}$`,
  description: "The grant's id as it was granted",
});

/**
 * A new grant's id: 1-128 printable characters (no control characters, no unpaired surrogates), with no
 * white space at either end (a pasted id's stray space; the embedded database cannot store one
 * as a field name: services/ingestion/domain/field-keys.ts). Grants made on MongoDB before that
 * rule are still named by their ids as stored (StoredGrantId) in paths.
 */
export const GrantId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: `^(?![\\s\\u0085])(?![\\s\\S]*[\\s\\u0085]$)${PRINTABLE}$`,
  description: "The caller's id of the grant (e.g. the payment's id), 1-128 printable characters, no white space at either end; sending it again is a no-op",
});

/** A grant as sent (docs/api.md, "Selling credits"); the service checks the rules across fields (expires_at after effective_at). */
export const GrantIn = Body(
  {
    id: GrantId,
    amount: Type.Number({ exclusiveMinimum: 0, maximum: 1e6, description: "Dollars, from 0.000000001 (a nano-dollar; 400 below) to 10^6; an owner's live grants hold at most $2,000,000 in all (409 past it)" }),
    kind: Type.Optional(Type.Union([Type.Literal("paid"), Type.Literal("promotional")], { description: "For reporting; draw order is by priority. Default paid" })),
    priority: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, description: "Lower is drawn first. Default 50" })),
    effective_at: Type.Optional(Nullable({ ...DateTime, description: "Not spendable before; default now" })),
    expires_at: Type.Optional(Nullable({ ...DateTime, description: "What is left then expires; default null (never). After effective_at" })),
    description: Type.Optional(Nullable(Type.String({ maxLength: 1024 }))),
    metadata: Type.Optional(Nullable(KeyedBy(Type.Unknown(), { description: "Kept and shown; at most 16 KiB as JSON" }))),
  },
  "A grant of prepaid credits",
);

const Enum = (values: readonly string[]) => Type.Unsafe<string>({ type: "string", enum: [...values] });
const Status = Enum(["pending", "active", "depleted", "expired", "voided"]);

export const GrantOut = Type.Object({
  id: Type.String(),
  amount: Type.Number({ description: "Dollars granted" }),
  remaining: Type.Number({ description: "Dollars left (0 once depleted, expired or voided)" }),
  kind: Type.Union([Type.Literal("paid"), Type.Literal("promotional")]),
  priority: Type.Integer(),
  effective_at: DateTime,
  expires_at: Nullable(DateTime),
  status: Status,
  description: Nullable(Type.String()),
  metadata: Nullable(KeyedBy(Type.Unknown())),
  created_at: DateTime,
});

const creditsFields = {
  balance: Type.Number({ description: "Dollars: active grants' remaining less the overdraft (negative with an overdraft)" }),
  pending: Type.Number({ description: "Dollars of grants not yet effective" }),
  overdraft: Type.Number({ description: "Dollars spent beyond the balance, paid first by the next grant" }),
  low_at: Nullable(Type.Number({ description: "The plan's credits_low_at" })),
  grants: Type.Array(GrantOut, { description: "Newest first (the newest 1,000)" }),
};

export const CreditsOut = Type.Object({ user_id: Type.String(), ...creditsFields });

/** A team's shared pool (BUDGETS.md §4): the same shape, named by team_id. */
export const TeamCreditsOut = Type.Object({ team_id: Type.String(), ...creditsFields });

export const LedgerEntryOut = Type.Object({
  at: { ...DateTime, description: "The hour for usage and overdraft entries (summed per grant and hour), the moment otherwise" },
  type: Enum(["grant", "usage", "expiry", "void", "overdraft"]),
  amount: Type.Number({ description: "Dollars, signed: usage, overdraft, expiry and void are negative" }),
  grant_id: Nullable(Type.String()),
  balance_after: Type.Number({ description: "The balance after the entry (the last change of the hour for summed entries)" }),
});

const ledgerFields = { entries: Type.Array(LedgerEntryOut), next_cursor: Nullable(Type.String()) };

export const LedgerPage = Type.Object({ user_id: Type.String(), ...ledgerFields });

export const TeamLedgerPage = Type.Object({ team_id: Type.String(), ...ledgerFields });

export const SessionCreditsOut = Type.Object(
  {
    balance: Type.Number({ description: "Dollars; negative with an overdraft" }),
    pending: Type.Number({ description: "Dollars of grants not yet effective" }),
    low_at: Nullable(Type.Number()),
    expiries: Type.Array(
      Type.Object({ grant_id: Type.String(), at: DateTime, remaining: Type.Number({ description: "Dollars that expire then" }) }),
      { description: "Active grants that expire, soonest first" },
    ),
  },
  { description: "The user's prepaid credits; null when the plan has credits disabled" },
);

const iso = (t: { seconds: bigint; nanos: number } | undefined) => (t ? timestampDate(t as never).toISOString() : null);

export function grantJson(g: CreditGrant) {
  return {
    id: g.id,
    amount: g.amount,
    remaining: g.remaining,
    kind: g.kind as "paid" | "promotional",
    priority: g.priority,
    effective_at: iso(g.effectiveAt)!,
    expires_at: iso(g.expiresAt),
    status: g.status,
    description: g.description ?? null,
    metadata: g.metadata ?? null,
    created_at: iso(g.createdAt)!,
  };
}

export function ledgerEntryJson(e: CreditLedgerEntry) {
  return { at: iso(e.at)!, type: e.type, amount: e.amount, grant_id: e.grantId ?? null, balance_after: e.balanceAfter };
}

export function sessionCreditsJson(c: SessionCredits) {
  return {
    balance: c.balance,
    pending: c.pending,
    low_at: c.lowAt ?? null,
    expiries: c.expiries.map((e) => ({ grant_id: e.grantId, at: iso(e.at)!, remaining: e.remaining })),
  };
}
