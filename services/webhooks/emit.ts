import type { WebhooksDeps } from "./deps.ts";
import { stableUuid } from "./events.ts";
import { scheduleAttempt } from "./jobs/deliver-attempt.ts";
import type { DeliveryDoc } from "./store/deliveries.ts";
import type { EndpointDoc } from "./store/endpoints.ts";

/**
 * Emits a hand-over's events in order; the subscribed endpoints of each (product, type) are
 * read once per hand-over. Sequential on purpose: on the embedded database every write is
 * serialized anyway, and parallel emits only contended with the delivery jobs.
 */
export async function emitEvents(deps: WebhooksDeps, events: NewEvent[]): Promise<void> {
  const lookups = new Map<string, Promise<EndpointDoc[]>>();
  const subscribed = (productId: string, type: string) => {
    const k = `${productId}\u0000${type}`;
    let p = lookups.get(k);
    if (!p) lookups.set(k, (p = deps.endpoints.subscribed(productId, type)));
    return p;
  };
  for (const e of events) await emitEvent(deps, e, subscribed);
}

export interface NewEvent {
  productId: string;
  type: string;
  /** Unique per product: emitting the same key again sends nothing new. */
  key: string;
  data: Record<string, unknown>;
}

/**
 * Stores the event once (unique on product and key) when at least one enabled endpoint is
 * subscribed to it, creates one pending delivery per such endpoint, and schedules their first
 * attempts. Every step is
 * idempotent, so a repeated hand-over finishes a fan-out that was interrupted and adds nothing.
 */
export async function emitEvent(
  deps: WebhooksDeps,
  e: NewEvent,
  subscribed: (productId: string, type: string) => Promise<EndpointDoc[]> = (p, t) => deps.endpoints.subscribed(p, t),
): Promise<{ created: boolean }> {
  const now = deps.now();
  const endpoints = await subscribed(e.productId, e.type);
  // Derived from (product, key): a repeated hand-over finds the stored event by primary key.
  const id = `whevt_${stableUuid(e.productId, e.key)}`;
  // Nobody to tell: nothing is stored (events are kept only for their deliveries), unless an
  // earlier hand-over stored it for endpoints that have since gone, and left its fan-out undone.
  if (endpoints.length === 0 && !(await deps.events.get(id))) return { created: false };
  const { event, created } = await deps.events.insertOnce({
    _id: id,
    product_id: e.productId,
    key: e.key,
    type: e.type,
    data: JSON.stringify(e.data),
    created_at: now,
    endpoint_ids: endpoints.map((x) => x._id),
  });
  for (const endpointId of event.endpoint_ids) {
    const doc: DeliveryDoc = {
      _id: `whdel_${stableUuid(event._id, endpointId)}`,
      product_id: event.product_id,
      endpoint_id: endpointId,
      event_id: event._id,
      event_type: event.type,
      status: "pending",
      status_code: 0,
      attempt: 0,
      created_at: now,
      completed_at: null,
      next_attempt_at: now,
      last_error: null,
    };
    const delivery = await deps.deliveries.ensure(doc);
    if (delivery.status === "pending" && delivery.attempt === 0) await scheduleAttempt(deps, delivery, 1, now);
  }
  return { created };
}
