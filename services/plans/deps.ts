import type { Logger } from "@meter/lib/logger";
import type { ChangeStore } from "./store/changes.ts";
import type { PlanMemberStore } from "./store/plan-members.ts";
import type { PlanStore } from "./store/plans.ts";
import type { SubscriberStore } from "./store/subscribers.ts";
import type { UserStore } from "./store/users.ts";

export interface PlansDeps {
  plans: PlanStore;
  users: UserStore;
  members: PlanMemberStore;
  subscribers: SubscriberStore;
  changes: ChangeStore;
  logger: Logger;
}
