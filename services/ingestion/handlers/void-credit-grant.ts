import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import type { IngestionDeps } from "../deps.ts";
import { attribute } from "../domain/attribution.ts";
import { userOwner } from "../credits/account.ts";
import { voidGrant } from "../credits/grants.ts";
import { grantMessage } from "../credits/view.ts";
import { requireUser } from "./common.ts";

/** What is left of a grant goes to 0; voiding again answers the grant unchanged. */
export function voidCreditGrant(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["voidCreditGrant"] {
  return async (req) => {
    const user = await requireUser(deps, req.productId, req.userId);
    const plan = attribute(req.productId, req.userId, user, deps.now()).plan;
    const { record, account } = await voidGrant(deps, req.productId, userOwner(req.userId), req.grantId, plan?.creditsLowAt ?? null);
    return { grant: grantMessage(record, account, deps.now()) };
  };
}
