import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { toDollars } from "@meter/rules";
import type { IngestionDeps } from "../deps.ts";
import { accountId } from "../credits/account.ts";
import { grantRecordId, isGrantOf } from "../credits/store.ts";
import { asAnswered, creditView, grantMessage } from "../credits/view.ts";
import { creditOwner } from "./credit-owner.ts";

/** Grants listed at most (the newest); older ones stay in the ledger. */
export const MAX_LISTED_GRANTS = 1000;

/**
 * A user's (or a team pool's) balance, pending credits, overdraft and grants (newest first): the account and the
 * owner's index read together, then the grants' records by `_id`.
 */
export function getCredits(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["getCredits"] {
  return async (req) => {
    const who = await creditOwner(deps, req);
    const now = deps.now();
    const owner = who.owner;
    const [account, index] = await Promise.all([deps.credits.account(accountId(req.productId, owner)), deps.credits.indexOf(req.productId, owner)]);
    const grants = (index?.grants ?? []).slice(-MAX_LISTED_GRANTS);
    const ids = grants.map((g) => grantRecordId(req.productId, owner, g));
    const listed = new Set(grants);
    const records = (await deps.credits.grantsOf(ids)).filter((r) => listed.has(r.grant_id) && isGrantOf(r, owner, r.grant_id)).sort(
      (a, b) => b.created_at.getTime() - a.created_at.getTime() || (a.grant_id < b.grant_id ? 1 : -1),
    );
    // The late overdraft payment computed once for the view and every grant listed.
    const answered = asAnswered(account, now);
    const v = creditView(answered, null, now);
    return {
      ...who.ids,
      balance: toDollars(v.balance),
      pending: toDollars(v.pending),
      overdraft: toDollars(v.overdraft),
      lowAt: who.lowAt,
      grants: records.map((r) => grantMessage(r, answered, now)),
    };
  };
}
