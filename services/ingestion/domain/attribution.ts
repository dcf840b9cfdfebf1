import { periodAt, type BillingPeriod } from "@meter/rules";
import type { KnownUser, PlanInfo } from "../adapters/plans.ts";
import { counterId } from "./counter-ids.ts";

/** Where usage at time `t` of a user goes: its billing period, plan and counter. */
export interface Attribution {
  period: BillingPeriod;
  plan: PlanInfo | null;
  counterId: string;
}

export function attribute(productId: string, userId: string, user: KnownUser | undefined, t: Date): Attribution {
  const period = periodAt(user?.subscriptions ?? [], t);
  const plan = (period.subscription && user?.plans.get(period.subscription.planId)) || null;
  return { period, plan, counterId: counterId(productId, userId, period.start) };
}

/** The attribution fields every stored usage event carries. */
export function attributionFields(a: Attribution) {
  return {
    counter_id: a.counterId,
    period_start: a.period.start,
    period_end: a.period.end,
    plan_name: a.plan?.name ?? null,
    spend_limit: a.plan?.maxSpendPerPeriod ?? null,
    // Only where usage beyond the allowance draws credits (credits/settle.ts); absent otherwise.
    ...(a.plan?.creditsEnabled && a.plan.maxSpendPerPeriod !== undefined && { credits: { low_at: a.plan.creditsLowAt ?? null } }),
  };
}
