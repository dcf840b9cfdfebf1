import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import type { IngestionDeps } from "../deps.ts";
import { voidGrant } from "../credits/grants.ts";
import { grantMessage } from "../credits/view.ts";
import { creditOwner } from "./credit-owner.ts";

/** What is left of a grant goes to 0; voiding again answers the grant unchanged. */
export function voidCreditGrant(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["voidCreditGrant"] {
  return async (req) => {
    const who = await creditOwner(deps, req);
    const { record, account } = await voidGrant(deps, req.productId, who.owner, req.grantId, { lowAt: who.lowAt ?? null, enabled: who.enabled });
    return { grant: grantMessage(record, account, deps.now()) };
  };
}
