import { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcClient } from "@meter/lib/rpc";

/** What analytics needs from the plans service. */
export interface PlansPort {
  /** Users and teams on each plan; with `teamId` (external), the team's current members and the team itself. */
  countSubscribers(productId: string, teamId?: string): Promise<{ planName: string; subscriberCount: number; teamSubscriberCount: number }[]>;
}

/** A gRPC client to the plans service, connected on first use. */
export function plansClient(baseUrl: string): PlansPort {
  let client: ReturnType<typeof rpcClient<typeof PlansService>> | undefined;
  return {
    async countSubscribers(productId, teamId) {
      client ??= rpcClient(PlansService, baseUrl);
      const res = await client.countSubscribers({ productId, externalTeamId: teamId });
      return res.plans.map((p) => ({ planName: p.planName, subscriberCount: Number(p.subscriberCount), teamSubscriberCount: Number(p.teamSubscriberCount) }));
    },
  };
}
