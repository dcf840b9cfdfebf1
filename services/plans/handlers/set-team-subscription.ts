import type { ServiceImpl } from "@connectrpc/connect";
import type { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import type { PlansDeps } from "../deps.ts";
import { announce, teamMessages, teamNotFound } from "./common.ts";
import { newSubscription } from "./set-subscription.ts";

/**
 * A team's subscription, with a user's rules (newSubscription), appended to the team's history
 * in one atomic write, then the plans' team counts moved; the team is named in the change marker so that clients reload its members.
 */
export function setTeamSubscription(deps: PlansDeps): ServiceImpl<typeof PlansService>["setTeamSubscription"] {
  return async (req) => {
    const productId = req.productId;
    const team = await deps.teams.get(productId, req.externalTeamId);
    if (!team) throw teamNotFound(req.externalTeamId);
    const { plan, entry } = await newSubscription(deps, productId, req);
    const appended = await deps.teams.appendSubscription(productId, req.externalTeamId, entry);
    if (!appended) throw teamNotFound(req.externalTeamId);
    if (!appended.appended) {
      // The subscription in force already: nothing changed.
      const [same] = await teamMessages(deps, productId, [appended.team]);
      return { team: same };
    }
    // The history's order says which plan this change left, as for a user's (set-subscription.ts).
    await deps.teamSubscribers.move(productId, appended.team.subscriptions[appended.entry.seq - 2]?.plan_id ?? null, plan.id);
    await announce(deps, productId, { externalTeamId: req.externalTeamId });
    deps.logger.info({ productId, teamId: team.id, planId: plan.id, seq: appended.entry.seq }, "team subscription set");
    // The team as this change left it: a concurrent later change is not reported as this one's.
    const asSet = { ...appended.team, current: appended.entry, subscriptions: appended.team.subscriptions.slice(0, appended.entry.seq) };
    const [message] = await teamMessages(deps, productId, [asSet]);
    return { team: message };
  };
}
