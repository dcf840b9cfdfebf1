import type { Client } from "@connectrpc/connect";
import type { PeerUrls } from "@meter/lib/config";
import { rpcClient } from "@meter/lib/rpc";
import { Health } from "@meter/proto/grpc/health/v1/health_pb";
import { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { TenancyService } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";

export const SERVICE_NAMES = ["tenancy", "plans", "ingestion", "analytics", "webhooks"] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** The gateway's view of the services: one gRPC client each, plus their health probes. */
export interface ServiceClients {
  tenancy: Client<typeof TenancyService>;
  plans: Client<typeof PlansService>;
  ingestion: Client<typeof IngestionService>;
  analytics: Client<typeof AnalyticsService>;
  webhooks: Client<typeof WebhooksService>;
  health: Record<ServiceName, Client<typeof Health>>;
}

export function connectClients(urls: PeerUrls): ServiceClients {
  return {
    tenancy: rpcClient(TenancyService, urls.tenancy),
    plans: rpcClient(PlansService, urls.plans),
    ingestion: rpcClient(IngestionService, urls.ingestion),
    analytics: rpcClient(AnalyticsService, urls.analytics),
    webhooks: rpcClient(WebhooksService, urls.webhooks),
    health: Object.fromEntries(SERVICE_NAMES.map((n) => [n, rpcClient(Health, urls[n])])) as Record<
      ServiceName,
      Client<typeof Health>
    >,
  };
}
