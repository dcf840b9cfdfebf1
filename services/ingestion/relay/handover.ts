import type { JsonObject } from "@bufbuild/protobuf";
import { toTimestamp } from "@meter/lib/time";
import { addDollars } from "@meter/rules";
import type { AnalyticsRecorder, WebhookPublisher } from "../adapters/peers.ts";
import { decodeKeys, decodeMetadata } from "../domain/field-keys.ts";
import type { CrossingDoc } from "../thresholds/store.ts";
import type { GateEventDoc } from "../store/gate-events.ts";
import type { OutboxStore } from "../store/outbox.ts";
import type { UsageEventDoc } from "../store/usage-events.ts";
import type { Outbox } from "./outbox.ts";
import type { NoticePayload } from "../credits/ledger.ts";

/** The handovers of ingestion; each outbox entry's payload is the stored document. */
/**
 * Facts per RecordEvents call: its bound (analytics' RECORD_MAX_FACTS). Analytics stores one
 * ledger segment per call and hour the call touches, and recomputes a day once per call that
 * marked it: an entry of events spread over days (a backfill) sent 500 at a time stored about
 * one segment per event and had each day recomputed again after every call.
 */
const RECORD_BATCH = 10_000;

export function outboxes(stores: { outbox: OutboxStore; webhooks: WebhookPublisher; analytics: AnalyticsRecorder }): Outbox[] {
  const usage: Outbox = {
    name: "usage->analytics",
    collection: stores.outbox.analytics,
    written: stores.outbox.analyticsWritten,
    kind: "usage",
    batchSize: RECORD_BATCH,
    send: (docs: Pick<UsageEventDoc, "product_id" | "event_id" | "user_id" | "timestamp" | "model" | "total_tokens" | "cost_total" | "source" | "tool_call_count" | "team_id">[]) =>
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
          ...(d.team_id !== undefined && { teamId: d.team_id }),
        })),
        [],
      ),
  };
  const gateFacts: Outbox = {
    name: "gates->analytics",
    collection: stores.outbox.analytics,
    written: stores.outbox.analyticsWritten,
    kind: "gate",
    batchSize: RECORD_BATCH,
    send: (docs: Pick<GateEventDoc, "product_id" | "event_id" | "user_id" | "timestamp" | "status" | "blocked" | "team_id">[]) =>
      stores.analytics.recordEvents(
        [],
        docs.map((d) => ({
          productId: d.product_id,
          eventId: d.event_id,
          userId: d.user_id,
          timestamp: toTimestamp(d.timestamp),
          status: d.status,
          blocked: d.blocked,
          ...(d.team_id !== undefined && { teamId: d.team_id }),
        })),
      ),
  };
  const gateNotices: Outbox = {
    name: "gates->webhooks",
    collection: stores.outbox.webhooks,
    kind: "gate",
    send: (docs: GateEventDoc[]) =>
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
          metadata: decodeMetadata(d.metadata) as JsonObject,
        })),
      ),
  };
  const crossings: Outbox = {
    name: "thresholds->webhooks",
    collection: stores.outbox.webhooks,
    kind: "threshold",
    send: (docs: CrossingDoc[]) =>
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
          costByModel: decodeKeys(d.cost_by_model, addDollars),
          periodStart: toTimestamp(d.period_start),
          periodEnd: toTimestamp(d.period_end),
          crossedAt: toTimestamp(d.crossed_at),
        })),
      ),
  };
  const credits: Outbox = {
    name: "credits->webhooks",
    collection: stores.outbox.webhooks,
    kind: "credits",
    send: (docs: NoticePayload[]) =>
      stores.webhooks.publishCreditEvents(
        docs.map((d) => ({
          id: d.id,
          productId: d.product_id,
          userId: d.user_id ?? "",
          teamId: d.team_id,
          type: d.type,
          balance: d.balance,
          lowAt: d.low_at ?? undefined,
          grantId: d.grant_id ?? undefined,
          amount: d.amount ?? undefined,
          at: toTimestamp(d.at),
        })),
      ),
  };
  return [usage, gateFacts, gateNotices, crossings, credits];
}
