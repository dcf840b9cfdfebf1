import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import type { PlansDeps } from "../deps.ts";
import { userMessage, userNotFound } from "./common.ts";

export function getUser(deps: PlansDeps): ServiceImpl<typeof PlansService>["getUser"] {
  return async (req) => {
    const productId = req.productId;
    const user = await deps.users.get(productId, req.externalUserId);
    if (!user) throw userNotFound(req.externalUserId);
    return { user: await userMessage(deps, productId, user) };
  };
}
