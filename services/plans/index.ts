import type { Db } from "mongodb";
import { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import type { PeerUrls } from "@meter/lib/config";
import type { Logger } from "@meter/lib/logger";
import { pingDb } from "@meter/lib/mongo";
import type { ServiceModule } from "@meter/lib/rpc";
import { ChangeStore } from "./store/changes.ts";
import { PlanMemberStore } from "./store/plan-members.ts";
import { PlanStore } from "./store/plans.ts";
import { SubscriberStore } from "./store/subscribers.ts";
import { TeamStore } from "./store/teams.ts";
import { UserStore } from "./store/users.ts";
import { countSubscribers } from "./handlers/count-subscribers.ts";
import { createTeam } from "./handlers/create-team.ts";
import { getTeam } from "./handlers/get-team.ts";
import { listTeamMembers } from "./handlers/list-team-members.ts";
import { listTeams } from "./handlers/list-teams.ts";
import { resolveTeams } from "./handlers/resolve-teams.ts";
import { setTeamSubscription } from "./handlers/set-team-subscription.ts";
import { setUserTeam } from "./handlers/set-user-team.ts";
import { createPlans } from "./handlers/create-plans.ts";
import { createUser } from "./handlers/create-user.ts";
import { getUser } from "./handlers/get-user.ts";
import { listChanges } from "./handlers/list-changes.ts";
import { listPlans } from "./handlers/list-plans.ts";
import { listUsers } from "./handlers/list-users.ts";
import { resolveUsers } from "./handlers/resolve-users.ts";
import { setSubscription } from "./handlers/set-subscription.ts";
import { updatePlan } from "./handlers/update-plan.ts";

const MB = 1024 * 1024;

export { plansSettings, plansSettingsFields } from "./config.ts";

export interface PlansServiceOptions {
  db: Db;
  logger: Logger;
  peers: PeerUrls;
  /** PLAN_CACHE_MS (see PlanStore.resolved); 0 reads every plan from the database. */
  planCacheMs?: number;
  /** USER_CACHE_MB in bytes (see UserCache); 0 reads every user from the database. */
  userCacheBytes?: number;
}

/** The plans service: plans, end users and their subscription history. */
export async function createPlansService(opts: PlansServiceOptions): Promise<ServiceModule> {
  const plans = new PlanStore(opts.db, { cacheMs: opts.planCacheMs ?? 1_000 });
  const users = new UserStore(opts.db, { logger: opts.logger, cacheBytes: opts.userCacheBytes ?? 64 * MB });
  const subscribers = new SubscriberStore(opts.db);
  const members = new PlanMemberStore(opts.db);
  await plans.init();
  const listed = await members.backfill(users.currentSubscriptions());
  if (listed > 0) opts.logger.info({ users: listed }, "plan member listing built for users subscribed before it existed");
  const changes = new ChangeStore(opts.db);
  const teams = new TeamStore(opts.db, users.cache);
  const teamMembers = new PlanMemberStore(opts.db, "team_members");
  const teamCounts = new SubscriberStore(opts.db, "team_member_counts");
  const teamSubscribers = new SubscriberStore(opts.db, "plan_team_subscribers");
  const counted = await teamSubscribers.backfill(teams.currentSubscriptions());
  if (counted > 0) opts.logger.info({ teams: counted }, "team subscriber counts set for teams subscribed before they were kept");
  const deps = { plans, users, members, subscribers, teamSubscribers, teams, teamMembers, teamCounts, changes, logger: opts.logger };
  return {
    name: "plans",
    serviceName: PlansService.typeName,
    routes(router) {
      router.service(PlansService, {
        createPlans: createPlans(deps),
        listPlans: listPlans(deps),
        updatePlan: updatePlan(deps),
        createUser: createUser(deps),
        getUser: getUser(deps),
        setSubscription: setSubscription(deps),
        resolveUsers: resolveUsers(deps),
        countSubscribers: countSubscribers(deps),
        listChanges: listChanges(deps),
        listUsers: listUsers(deps),
        createTeam: createTeam(deps),
        getTeam: getTeam(deps),
        listTeams: listTeams(deps),
        setTeamSubscription: setTeamSubscription(deps),
        setUserTeam: setUserTeam(deps),
        listTeamMembers: listTeamMembers(deps),
        resolveTeams: resolveTeams(deps),
      });
    },
    healthy: () => pingDb(opts.db),
    async start() {
      users.cache.start();
    },
    async stop() {
      await users.cache.stop();
    },
  };
}
