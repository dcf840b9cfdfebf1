import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcError } from "@meter/lib/errors";
import { toPlan, toSubscription, toUser } from "./mapping.ts";
import type { PlansDeps } from "../deps.ts";

export const RESOLVE_MAX_USERS = 1000;

/**
 * One query by the users' `_id`s (each history is inside) and one by the plans' named but
 * not cached (PlanStore.resolved): the cost grows with the batch, not with the number of
 * users the product has. The user's plan is the
 * latest entry of its history.
 */
export function resolveUsers(deps: PlansDeps): ServiceImpl<typeof PlansService>["resolveUsers"] {
  return async (req) => {
    const productId = req.productId;
    if (req.externalUserIds.length > RESOLVE_MAX_USERS) {
      throw rpcError.invalid(`at most ${RESOLVE_MAX_USERS} users per request`);
    }
    const users = await deps.users.getMany(productId, req.externalUserIds);
    const planIds = users.flatMap((u) => u.subscriptions.map((s) => s.plan_id));
    const plans = new Map((await deps.plans.resolved(productId, planIds)).map((p) => [p.id, p]));
    return {
      users: users.map((u) => ({
        user: toUser(u, u.current ? plans.get(u.current.plan_id)?.name : undefined),
        subscriptions: u.subscriptions.map((s) => toSubscription(s, plans.get(s.plan_id)?.name)),
        plans: Object.fromEntries(
          [...new Set(u.subscriptions.map((s) => s.plan_id))].flatMap((id) => {
            const p = plans.get(id);
            return p ? [[id, toPlan(p)]] : [];
          }),
        ),
      })),
    };
  };
}
