import { createHash } from "node:crypto";
import { THRESHOLDS, WEBHOOK_EVENT_TYPES, type WebhookEventType } from "@meter/rules";

/** Every webhook event type of the API contract; endpoints subscribe to a non-empty subset. */
export const EVENT_TYPES = WEBHOOK_EVENT_TYPES;
export type EventType = WebhookEventType;

/** Type of the synthetic event sent by the test endpoint; not subscribable, never retried. */
export const TEST_EVENT_TYPE = "webhook.test";

/** Date carried as `api_version` in every envelope. */
export const API_VERSION = "2026-01-01";

export const USER_AGENT = "Meterline-Webhooks/1.0";

export { THRESHOLDS };

/** Delay before each attempt (attempt n waits RETRY_DELAYS_MS[n-1]), as in the contract. */
export const RETRY_DELAYS_MS = [0, 60_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 8 * 3_600_000] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length;

export function isEventType(t: string): t is EventType {
  return (EVENT_TYPES as readonly string[]).includes(t);
}

/** Validates and de-duplicates a subscription list, keeping the caller's order. */
export function validateSubscribedEvents(types: readonly string[]): { ok: EventType[] } | { error: string } {
  if (types.length === 0) return { error: `subscribed_events must name at least one of: ${EVENT_TYPES.join(", ")}` };
  const unknown = types.filter((t) => !isEventType(t));
  if (unknown.length > 0) {
    return { error: `unknown event type(s) ${unknown.map((u) => JSON.stringify(u)).join(", ")}; allowed: ${EVENT_TYPES.join(", ")}` };
  }
  return { ok: [...new Set(types as EventType[])] };
}

/** The envelope of every delivery, serialised once per event so every attempt sends the same body. */
export interface Envelope {
  id: string;
  type: string;
  api_version: string;
  created_at: string;
  product_id: string;
  data: Record<string, unknown>;
}

export function envelopeBody(e: Envelope): string {
  return JSON.stringify({
    id: e.id,
    type: e.type,
    api_version: e.api_version,
    created_at: e.created_at,
    product_id: e.product_id,
    data: e.data,
  });
}

/** A UUID-shaped id derived from its inputs, so that writing the same thing twice hits one primary key. */
export function stableUuid(...parts: string[]): string {
  const h = createHash("sha256").update(parts.join("\u0000")).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
