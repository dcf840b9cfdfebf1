import type { Logger } from "@meter/lib/logger";
import type { ChangeStore } from "./store/changes.ts";
import type { PlanMemberStore } from "./store/plan-members.ts";
import type { PlanStore } from "./store/plans.ts";
import type { SubscriberStore } from "./store/subscribers.ts";
import type { TeamStore } from "./store/teams.ts";
import type { UserStore } from "./store/users.ts";

export interface PlansDeps {
  plans: PlanStore;
  users: UserStore;
  members: PlanMemberStore;
  subscribers: SubscriberStore;
  /** Teams subscribed to each plan (SetTeamSubscription keeps it as SetSubscription keeps `subscribers`). */
  teamSubscribers: SubscriberStore;
  teams: TeamStore;
  /** Current members of each team, by service team id (SetUserTeam keeps it as SetSubscription keeps `members`). */
  teamMembers: PlanMemberStore;
  /** Member count of each team, by service team id. */
  teamCounts: SubscriberStore;
  changes: ChangeStore;
  logger: Logger;
}
