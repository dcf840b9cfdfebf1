import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcError } from "@meter/lib/errors";
import { toPlan, toSubscription, toUser } from "../mapping.ts";
import type { PlansDeps } from "../deps.ts";
import { requireProduct, withLatest } from "./common.ts";

export const RESOLVE_MAX_USERS = 1000;

/**
 * Three queries whatever the number of users: users, their histories, the plans named. The
 * user's plan is the latest entry of its history.
 */
export function resolveUsers(deps: PlansDeps): ServiceImpl<typeof PlansService>["resolveUsers"] {
  return async (req) => {
    const productId = requireProduct(req.productId);
    if (req.externalUserIds.length > RESOLVE_MAX_USERS) {
      throw rpcError.invalid(`at most ${RESOLVE_MAX_USERS} users per request`);
    }
    const users = await deps.users.getMany(productId, req.externalUserIds);
    const histories = await deps.subscriptions.historyOf(
      productId,
      users.map((u) => u._id),
    );
    const resolved = await Promise.all(users.map((u) => withLatest(deps, u, histories.get(u._id)!.at(-1) ?? null)));
    const planIds = [...histories.values()].flat().map((s) => s.plan_id);
    const plans = new Map((await deps.plans.getMany(productId, planIds)).map((p) => [p.id, p]));
    return {
      users: resolved.map((u) => {
        const history = histories.get(u._id)!;
        return {
          user: toUser(u, u.current ? plans.get(u.current.plan_id)?.name : undefined),
          subscriptions: history.map((s) => toSubscription(s, plans.get(s.plan_id)?.name)),
          plans: Object.fromEntries(
            [...new Set(history.map((s) => s.plan_id))].flatMap((id) => {
              const p = plans.get(id);
              return p ? [[id, toPlan(p)]] : [];
            }),
          ),
        };
      }),
    };
  };
}
