import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import type { PlansDeps } from "../deps.ts";

/** Every plan of the product, with zero for plans nobody is on, in plan creation order. */
export function countSubscribers(deps: PlansDeps): ServiceImpl<typeof PlansService>["countSubscribers"] {
  return async (req) => {
    const productId = req.productId;
    // Names only: the plans' maps are not needed here.
    const names = await deps.plans.names(productId);
    const counts = await deps.subscribers.countsOf(productId, [...names.keys()]);
    return {
      plans: [...names].map(([id, name]) => ({ planName: name, subscriberCount: BigInt(counts.get(id) ?? 0) })),
    };
  };
}
