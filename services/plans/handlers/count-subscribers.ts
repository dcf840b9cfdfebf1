import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import type { PlansDeps } from "../deps.ts";

/** Every plan of the product, with zero for plans nobody is on, in plan creation order. */
export function countSubscribers(deps: PlansDeps): ServiceImpl<typeof PlansService>["countSubscribers"] {
  return async (req) => {
    const productId = req.productId;
    const plans = await deps.plans.list(productId);
    const counts = await deps.subscribers.countsOf(
      productId,
      plans.map((p) => p.id),
    );
    return {
      plans: plans.map((p) => ({ planName: p.name, subscriberCount: BigInt(counts.get(p.id) ?? 0) })),
    };
  };
}
