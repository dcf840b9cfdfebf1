import { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { rpcClient } from "@meter/lib/rpc";

/** What analytics needs from the plans service. */
export interface PlansPort {
  /** With `teamId` (external), of the team's current members only. */
  countSubscribers(productId: string, teamId?: string): Promise<{ planName: string; subscriberCount: number }[]>;
}

/** A gRPC client to the plans service, connected on first use. */
export function plansClient(baseUrl: string): PlansPort {
  let client: ReturnType<typeof rpcClient<typeof PlansService>> | undefined;
  return {
    async countSubscribers(productId, teamId) {
      client ??= rpcClient(PlansService, baseUrl);
      const res = await client.countSubscribers({ productId, externalTeamId: teamId });
      return res.plans.map((p) => ({ planName: p.planName, subscriberCount: Number(p.subscriberCount) }));
    },
  };
}
