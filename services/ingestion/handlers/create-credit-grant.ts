import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { fromTimestamp } from "@meter/lib/time";
import type { IngestionDeps } from "../deps.ts";
import { attribute } from "../domain/attribution.ts";
import { userOwner } from "../credits/account.ts";
import { addGrant } from "../credits/grants.ts";
import { grantMessage } from "../credits/view.ts";
import { requireUser } from "./common.ts";

/** Adds a grant to a user's credits (credits/grants.ts); `created` false when it was sent before. */
export function createCreditGrant(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["createCreditGrant"] {
  return async (req) => {
    const user = await requireUser(deps, req.productId, req.userId);
    const plan = attribute(req.productId, req.userId, user, deps.now()).plan;
    const { record, account, created } = await addGrant(
      deps,
      req.productId,
      userOwner(req.userId),
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
      plan?.creditsLowAt ?? null,
    );
    return { grant: grantMessage(record, account, deps.now()), created };
  };
}
