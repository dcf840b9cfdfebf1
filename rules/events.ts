import { THRESHOLDS } from "./thresholds.ts";

/**
 * Every webhook event type an endpoint can subscribe to (docs/api.md, "Webhooks"), in the order the
 * contract lists them: the webhooks service validates subscriptions against it and the console
 * offers it, so a new type is added here once.
 */
export const WEBHOOK_EVENT_TYPES = [
  "gate_event.soft_gate",
  "gate_event.hard_gate",
  "gate_event.blocked",
  ...THRESHOLDS.map((pct) => `usage.threshold.${pct}` as const),
  "usage.summary.daily",
  "usage.summary.weekly",
  "usage.summary.monthly",
  "credits.low",
  "credits.depleted",
  "credits.expired",
] as const;

/** The webhook types of prepaid credits (BUDGETS.md §3), announced by ingestion. */
export const CREDIT_EVENT_TYPES = ["credits.low", "credits.depleted", "credits.expired"] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * What a gate event says (docs/api.md, POST /gate-events/batch), as the clients send it and
 * ingestion stores it; each adds the event's id, timestamp and metadata in its own form.
 */
export interface GateEventFacts {
  user_id: string;
  service_user_id: string | null;
  session_id: string | null;
  status: "soft_gate" | "hard_gate";
  gate_reason: string;
  usage_pct: number;
  current_value: number;
  limit_value: number;
  model: string | null;
  blocked: boolean;
  message: string | null;
}
