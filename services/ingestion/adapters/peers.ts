import type { GateFact, UsageFact } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { AnalyticsService } from "@meter/proto/meter/analytics/v1/analytics_pb";
import type { GateNotice, ThresholdCrossing } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CreditNoticeSchema, GateNoticeSchema, ThresholdCrossingSchema } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import type { GateFactSchema, UsageFactSchema } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { rpcClient } from "@meter/lib/rpc";

export type CrossingInit = MessageInitShape<typeof ThresholdCrossingSchema>;
export type GateNoticeInit = MessageInitShape<typeof GateNoticeSchema>;
export type CreditNoticeInit = MessageInitShape<typeof CreditNoticeSchema>;
export type UsageFactInit = MessageInitShape<typeof UsageFactSchema>;
export type GateFactInit = MessageInitShape<typeof GateFactSchema>;
export type { GateFact, GateNotice, ThresholdCrossing, UsageFact };

/** What ingestion hands to the webhooks service; both calls are idempotent on the ids sent. */
export interface WebhookPublisher {
  publishThresholdCrossings(crossings: CrossingInit[]): Promise<void>;
  publishGateEvents(events: GateNoticeInit[]): Promise<void>;
  publishCreditEvents(events: CreditNoticeInit[]): Promise<void>;
}

/** What ingestion hands to the analytics service; idempotent on event id. */
export interface AnalyticsRecorder {
  recordEvents(usage: UsageFactInit[], gates: GateFactInit[]): Promise<void>;
}

export function webhooksPublisher(baseUrl: string): WebhookPublisher {
  const client = rpcClient(WebhooksService, baseUrl);
  return {
    async publishThresholdCrossings(crossings) {
      await client.publishThresholdCrossings({ crossings });
    },
    async publishGateEvents(events) {
      await client.publishGateEvents({ events });
    },
    async publishCreditEvents(events) {
      await client.publishCreditEvents({ events });
    },
  };
}

export function analyticsRecorder(baseUrl: string): AnalyticsRecorder {
  const client = rpcClient(AnalyticsService, baseUrl);
  return {
    async recordEvents(usage, gates) {
      await client.recordEvents({ usage, gates });
    },
  };
}
