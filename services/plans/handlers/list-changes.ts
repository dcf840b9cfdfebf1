import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcError } from "@meter/lib/errors";
import type { PlansDeps } from "../deps.ts";

export function listChanges(deps: PlansDeps): ServiceImpl<typeof PlansService>["listChanges"] {
  return async (req) => {
    const productId = req.productId;
    if (req.since !== undefined && req.since < 0n) throw rpcError.invalid("since must be a marker this service returned (0 or more)");
    const c = await deps.changes.list(productId, req.since === undefined ? undefined : Number(req.since));
    return { marker: BigInt(c.marker), all: c.all, planIds: c.planIds, externalUserIds: c.externalUserIds, externalTeamIds: c.externalTeamIds };
  };
}
