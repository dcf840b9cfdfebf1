import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcError } from "@meter/lib/errors";
import { fromTimestamp } from "@meter/lib/time";
import type { PlansDeps } from "../deps.ts";
import { requireProduct, userMessage, userNotFound, withLatest } from "./common.ts";

const BILLING_ID_MAX = 255;

/**
 * Dates: both or neither; required when the plan has a finite max_spend_per_period;
 * period_end (exclusive) after period_start.
 */
export function checkPeriod(
  planName: string,
  maxSpendPerPeriod: number | null,
  start: Date | undefined,
  end: Date | undefined,
): void {
  if (maxSpendPerPeriod !== null && (!start || !end)) {
    throw rpcError.precondition(
      `plan "${planName}" has a finite max_spend_per_period: period_start and period_end are both required`,
    );
  }
  if ((start === undefined) !== (end === undefined)) {
    throw rpcError.invalid("send both period_start and period_end, or neither");
  }
  if (start && end && end.getTime() <= start.getTime()) {
    throw rpcError.invalid("period_end must be after period_start");
  }
}

/**
 * The change is appended to the history first (the unique index on the history position
 * orders concurrent changes), then copied onto the user document.
 */
export function setSubscription(deps: PlansDeps): ServiceImpl<typeof PlansService>["setSubscription"] {
  return async (req) => {
    const productId = requireProduct(req.productId);
    if (req.billingSubscriptionId !== undefined && req.billingSubscriptionId.length > BILLING_ID_MAX) {
      throw rpcError.invalid(`billing_subscription_id must be at most ${BILLING_ID_MAX} characters`);
    }
    const user = await deps.users.get(productId, req.externalUserId);
    if (!user) throw userNotFound(req.externalUserId);
    const plan = await deps.plans.get(productId, req.planId.toLowerCase());
    if (!plan) throw rpcError.notFound(`plan "${req.planId}" not found; plan_id must be the id of one of your plans`);
    const start = fromTimestamp(req.periodStart);
    const end = fromTimestamp(req.periodEnd);
    checkPeriod(plan.name, plan.max_spend_per_period, start, end);

    const entry = await deps.subscriptions.append(productId, user._id, {
      plan_id: plan.id,
      plan_name: plan.name,
      billing_subscription_id: req.billingSubscriptionId ?? null,
      period_start: start ?? null,
      period_end: end ?? null,
      effective_at: new Date(),
    });
    await deps.users.cacheCurrent(user._id, entry);
    const updated = await withLatest(deps, { ...user, current: entry, updated_at: entry.effective_at });
    deps.logger.info({ productId, userId: user._id, planId: plan.id, seq: entry.seq }, "subscription set");
    return { user: await userMessage(deps, productId, updated) };
  };
}
