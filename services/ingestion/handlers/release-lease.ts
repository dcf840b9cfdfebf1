import type { ServiceImpl } from "@connectrpc/connect";
import type { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcError } from "@meter/lib/errors";
import type { IngestionDeps } from "../deps.ts";
import { attribute } from "../usage.ts";
import { requireProduct, requireUser } from "./common.ts";
import { leaseMessage, requireDollars, requireLeaseId } from "./lease-common.ts";

/**
 * Gives back the unused part of a lease of the current period: the lease keeps exactly what
 * its holder says it used, so usage events still on their way settle it to zero outstanding,
 * whichever arrives first.
 */
export function releaseLease(deps: IngestionDeps): ServiceImpl<typeof IngestionService>["releaseLease"] {
  return async (req) => {
    const productId = requireProduct(req.productId);
    const holder = requireLeaseId("lease_id", req.leaseId);
    const used = requireDollars("used", req.used);
    const user = await requireUser(deps, productId, req.userId);
    const a = attribute(productId, req.userId, user, deps.now());
    const lease = await deps.leases.store.release(a.counterId, holder, used);
    if (!lease) throw rpcError.notFound(`lease "${holder}" not found in the current period of user "${req.userId}"`);
    return { lease: leaseMessage(holder, lease, { ttlMs: 0, periodEnd: a.period.end }) };
  };
}
