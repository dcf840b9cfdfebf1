import { characters } from "@meter/lib/characters";
import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcError } from "@meter/lib/errors";
import { fromTimestamp } from "@meter/lib/time";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { PlansDeps } from "../deps.ts";
import type { StoredPlan } from "../store/plans.ts";
import type { StoredEntry } from "../store/subscriptions.ts";
import { announce, userMessage, userNotFound } from "./common.ts";
import { canonicalUuid } from "@meter/lib/uuids";

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

/** What a user's and a team's subscription requests share. */
export interface SubscriptionRequest {
  planId: string;
  billingSubscriptionId?: string;
  periodStart?: Timestamp;
  periodEnd?: Timestamp;
}

/**
 * A new history entry from a subscription request, for a user or a team alike: the plan must
 * be one of the product's; dates as checkPeriod says. NOT_FOUND, INVALID_ARGUMENT or
 * FAILED_PRECONDITION naming what to fix.
 */
export async function newSubscription(deps: PlansDeps, productId: string, req: SubscriptionRequest): Promise<{ plan: StoredPlan; entry: StoredEntry }> {
  if (req.billingSubscriptionId !== undefined && characters(req.billingSubscriptionId) > BILLING_ID_MAX) {
    throw rpcError.invalid(`billing_subscription_id must be at most ${BILLING_ID_MAX} characters`);
  }
  const plan = await deps.plans.get(productId, canonicalUuid(req.planId));
  if (!plan) throw rpcError.notFound(`plan "${req.planId}" not found; plan_id must be the id of one of your plans`);
  const start = fromTimestamp(req.periodStart);
  const end = fromTimestamp(req.periodEnd);
  checkPeriod(plan.name, plan.max_spend_per_period, start, end);
  return {
    plan,
    entry: {
      id: randomUUID(),
      plan_id: plan.id,
      plan_name: plan.name,
      billing_subscription_id: req.billingSubscriptionId ?? null,
      period_start: start ?? null,
      period_end: end ?? null,
      effective_at: new Date(),
    },
  };
}

/**
 * The change is appended to the history inside the user document (one atomic write orders
 * concurrent changes), then the subscriber counts move from the plan before it to this one. The
 * subscription in force already (same plan, dates and billing id) changes nothing.
 */
export function setSubscription(deps: PlansDeps): ServiceImpl<typeof PlansService>["setSubscription"] {
  return async (req) => {
    const productId = req.productId;
    const user = await deps.users.get(productId, req.externalUserId);
    if (!user) throw userNotFound(req.externalUserId);
    const { plan, entry: sub } = await newSubscription(deps, productId, req);

    // Listed under the new plan before the change is stored; the subscription it replaces is
    // taken off its plan after (PlanMemberStore): the user is under its current plan at every moment.
    await deps.members.add(productId, plan.id, req.externalUserId, sub.id);
    const appended = await deps.users.appendSubscription(productId, req.externalUserId, sub);
    if (!appended) throw userNotFound(req.externalUserId);
    const { user: updated, entry } = appended;
    if (!appended.appended) {
      // The subscription in force already: nothing changed, and the listing keeps the one it has.
      await deps.members.remove(productId, plan.id, req.externalUserId, sub.id);
      return { user: await userMessage(deps, productId, updated) };
    }
    const before = updated.subscriptions[entry.seq - 2];
    const previous = before?.plan_id ?? null;
    await deps.subscribers.move(productId, previous, plan.id);
    if (before) await deps.members.remove(productId, before.plan_id, req.externalUserId, before.id);
    await announce(deps, productId, { externalUserId: req.externalUserId });
    deps.logger.info({ productId, userId: updated.id, planId: plan.id, seq: entry.seq }, "subscription set");
    // The user as this change left it: a concurrent later change is not reported as this one's.
    const asSet = { ...updated, current: entry, subscriptions: updated.subscriptions.slice(0, entry.seq) };
    return { user: await userMessage(deps, productId, asSet) };
  };
}
