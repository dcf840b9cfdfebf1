import { toTimestamp } from "@meter/lib/time";
import type { AnalyticsRecorder, WebhookPublisher } from "../adapters/peers.ts";
import type { CrossingDoc, CrossingStore } from "../store/crossings.ts";
import type { GateEventDoc, GateEventStore } from "../store/gate-events.ts";
import type { UsageEventDoc, UsageEventStore } from "../store/usage-events.ts";
import type { Outbox } from "./outbox.ts";

/** The four handovers of ingestion: what each peer must receive, read from our own collections. */
export function outboxes(stores: {
  events: UsageEventStore;
  gates: GateEventStore;
  crossings: CrossingStore;
  webhooks: WebhookPublisher;
  analytics: AnalyticsRecorder;
}): Outbox<any>[] {
  const usage: Outbox<UsageEventDoc> = {
    name: "usage->analytics",
    collection: stores.events.events,
    flag: "to_analytics",
    send: (docs) =>
      stores.analytics.recordEvents(
        docs.map((d) => ({
          productId: d.product_id,
          eventId: d.event_id,
          userId: d.user_id,
          timestamp: toTimestamp(d.timestamp),
          model: d.model ?? undefined,
          tokens: BigInt(d.total_tokens),
          cost: d.cost_total,
          source: d.source,
          toolCalls: BigInt(d.tool_call_count),
        })),
        [],
      ),
  };
  const gateFacts: Outbox<GateEventDoc> = {
    name: "gates->analytics",
    collection: stores.gates.gates,
    flag: "to_analytics",
    send: (docs) =>
      stores.analytics.recordEvents(
        [],
        docs.map((d) => ({
          productId: d.product_id,
          eventId: d.event_id,
          userId: d.user_id,
          timestamp: toTimestamp(d.timestamp),
          status: d.status,
          blocked: d.blocked,
        })),
      ),
  };
  const gateNotices: Outbox<GateEventDoc> = {
    name: "gates->webhooks",
    collection: stores.gates.gates,
    flag: "to_webhooks",
    send: (docs) =>
      stores.webhooks.publishGateEvents(
        docs.map((d) => ({
          id: d.event_id,
          productId: d.product_id,
          userId: d.user_id,
          status: d.status,
          gateReason: d.gate_reason,
          usagePct: d.usage_pct,
          currentValue: d.current_value,
          limitValue: d.limit_value,
          blocked: d.blocked,
          message: d.message ?? undefined,
          timestamp: toTimestamp(d.timestamp),
          metadata: d.metadata as never,
        })),
      ),
  };
  const crossings: Outbox<CrossingDoc> = {
    name: "thresholds->webhooks",
    collection: stores.crossings.crossings,
    flag: "to_webhooks",
    send: (docs) =>
      stores.webhooks.publishThresholdCrossings(
        docs.map((d) => ({
          id: d.crossing_id,
          productId: d.product_id,
          userId: d.user_id,
          thresholdPct: d.threshold_pct,
          currentSpend: d.current_spend,
          spendLimit: d.spend_limit,
          planName: d.plan_name,
          tokensTotal: BigInt(d.tokens_total),
          costByModel: d.cost_by_model,
          periodStart: toTimestamp(d.period_start),
          periodEnd: toTimestamp(d.period_end),
          crossedAt: toTimestamp(d.crossed_at),
        })),
      ),
  };
  return [usage, gateFacts, gateNotices, crossings];
}
