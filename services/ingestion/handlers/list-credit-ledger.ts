import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcError } from "@meter/lib/errors";
import { toTimestamp } from "@meter/lib/time";
import { toDollars } from "@meter/rules";
import type { IngestionDeps } from "../deps.ts";
import { listLedger } from "../credits/ledger.ts";
import { creditOwner } from "./credit-owner.ts";

/** A page of a user's (or a team pool's) credit ledger, newest first (credits/ledger.ts). */
export function listCreditLedger(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["listCreditLedger"] {
  return async (req) => {
    const limit = req.limit === 0 ? 50 : req.limit;
    if (limit < 1 || limit > 200) throw rpcError.invalid("limit must be 1-200");
    const who = await creditOwner(deps, req);
    const page = await listLedger(deps, req.productId, who.owner, limit, req.cursor);
    return {
      ...who.ids,
      entries: page.entries.map((e) => ({
        at: toTimestamp(e.at),
        type: e.type,
        amount: toDollars(e.amount_nano),
        grantId: e.grant_id ?? undefined,
        balanceAfter: toDollars(e.balance_after_nano),
      })),
      nextCursor: page.next,
    };
  };
}
