import { randomUUID } from "node:crypto";
import type { Db } from "mongodb";
import { createLogger } from "@meter/lib/logger";
import { PlanMemberStore } from "../../services/plans/store/plan-members.ts";
import { UserStore } from "../../services/plans/store/users.ts";

/** The plans service's user stores on a bench's plans database: seeding through them is faster than through the API. */
export function planStores(db: Db, name: string) {
  return { users: new UserStore(db, { logger: createLogger(`bench-${name}`, "warn") }), members: new PlanMemberStore(db) };
}

/** A subscription written as SetSubscription writes it (the plan's member, the user's subscription), so that GET /users?plan= lists the user. */
export async function subscribeInStores(
  stores: ReturnType<typeof planStores>,
  productId: string,
  userId: string,
  plan: { id: string; name: string },
  period: { start: Date | null; end: Date | null; effectiveAt?: Date },
): Promise<void> {
  const sub = randomUUID();
  await stores.members.add(productId, plan.id, userId, sub);
  await stores.users.appendSubscription(productId, userId, {
    id: sub,
    plan_id: plan.id,
    plan_name: plan.name,
    billing_subscription_id: null,
    period_start: period.start,
    period_end: period.end,
    effective_at: period.effectiveAt ?? new Date(),
  });
}
