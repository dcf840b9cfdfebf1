import { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { rpcClient } from "@meter/lib/rpc";
import { toTimestamp } from "@meter/lib/time";

/** Product-wide figures for one window, as the summaries need them. */
export interface WindowReport {
  activeUsers: number;
  totalCost: number;
  totalTokens: number;
  totalEvents: number;
  softGates: number;
  hardGates: number;
  topUsers: { userId: string; cost: number; tokens: number }[];
}

/** What the webhooks service needs from the analytics service. */
export interface AnalyticsPort {
  windowReport(productId: string, start: Date, end: Date, topUsers: number): Promise<WindowReport>;
}

export function analyticsAdapter(baseUrl: string): AnalyticsPort {
  const client = rpcClient(AnalyticsService, baseUrl);
  return {
    async windowReport(productId, start, end, topUsers) {
      const res = await client.getWindowReport(
        { productId, start: toTimestamp(start), end: toTimestamp(end), topUsersLimit: topUsers },
        { timeoutMs: 30_000 },
      );
      return {
        activeUsers: Number(res.totals?.activeUsers ?? 0),
        totalCost: res.totals?.totalCost ?? 0,
        totalTokens: Number(res.totals?.totalTokens ?? 0),
        totalEvents: Number(res.totals?.totalEvents ?? 0),
        softGates: Number(res.softGates),
        hardGates: Number(res.hardGates),
        topUsers: res.topUsers.map((u) => ({ userId: u.userId, cost: u.cost, tokens: Number(u.tokens) })),
      };
    },
  };
}
