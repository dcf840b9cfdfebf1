import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { toPlan } from "./mapping.ts";
import type { PlansDeps } from "../deps.ts";

export function listPlans(deps: PlansDeps): ServiceImpl<typeof PlansService>["listPlans"] {
  return async (req) => {
    const plans = await deps.plans.list(req.productId);
    return { plans: plans.map(toPlan) };
  };
}
