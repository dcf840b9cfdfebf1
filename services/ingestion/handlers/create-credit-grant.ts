import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { fromTimestamp } from "@meter/lib/time";
import type { IngestionDeps } from "../deps.ts";
import { addGrant } from "../credits/grants.ts";
import { grantMessage } from "../credits/view.ts";
import { creditOwner } from "./credit-owner.ts";

/** Adds a grant to a user's credits or a team's pool (credits/grants.ts); `created` false when it was sent before. */
export function createCreditGrant(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["createCreditGrant"] {
  return async (req) => {
    const who = await creditOwner(deps, req);
    const { record, account, created } = await addGrant(
      deps,
      req.productId,
      who.owner,
      {
        id: req.grantId,
        amount: req.amount,
        kind: req.kind,
        priority: req.priority,
        effectiveAt: fromTimestamp(req.effectiveAt),
        expiresAt: fromTimestamp(req.expiresAt),
        description: req.description,
        metadata: req.metadata,
      },
      { lowAt: who.lowAt ?? null, enabled: who.enabled },
    );
    return { grant: grantMessage(record, account, deps.now()), created };
  };
}
