import type { Logger } from "@meter/lib/logger";
import type { PlanStore } from "./store/plans.ts";
import type { SubscriptionStore } from "./store/subscriptions.ts";
import type { UserStore } from "./store/users.ts";

export interface PlansDeps {
  plans: PlanStore;
  users: UserStore;
  subscriptions: SubscriptionStore;
  logger: Logger;
}
