import type { WebhooksDeps } from "../deps.ts";
import { stableUuid } from "../domain/events.ts";
import type { DeliveryDoc } from "../store/deliveries.ts";
import type { EndpointDoc } from "../store/endpoints.ts";
import type { EventDoc } from "../store/events.ts";
import { attemptEntry, fanoutEntry, type QueueEntry } from "../store/queue.ts";

export interface NewEvent {
  productId: string;
  type: string;
  /** Unique per product: emitting the same key again sends nothing new. */
  key: string;
  data: Record<string, unknown>;
}

/**
 * Records the events of a hand-over and queues their fan-out; it sends nothing and creates no
 * delivery, so a hand-over costs a few writes whatever the number of endpoints (the dispatcher
 * fans out and delivers, dispatcher.ts). An event is stored once (its id is derived from
 * product and key) and only when at least one enabled endpoint is subscribed to it; it keeps
 * those endpoints' ids, which its fan-out reaches. The subscribed endpoints of each
 * (product, type) are read once per hand-over. Returns how many events were new.
 */
export async function recordEvents(deps: WebhooksDeps, events: NewEvent[]): Promise<number> {
  const now = deps.now();
  const lookups = new Map<string, Promise<EndpointDoc[]>>();
  const subscribed = (productId: string, type: string) => {
    const k = `${productId}\u0000${type}`;
    let p = lookups.get(k);
    if (!p) lookups.set(k, (p = deps.endpoints.subscribed(productId, type)));
    return p;
  };
  const docs = new Map<string, EventDoc>();
  for (const e of events) {
    const id = `whevt_${stableUuid(e.productId, e.key)}`;
    if (docs.has(id)) continue;
    const endpoints = await subscribed(e.productId, e.type);
    if (endpoints.length === 0) continue;
    docs.set(id, {
      _id: id,
      product_id: e.productId,
      key: e.key,
      type: e.type,
      data: JSON.stringify(e.data),
      created_at: now,
      endpoint_ids: endpoints.map((x) => x._id),
    });
  }
  if (docs.size === 0) return 0;
  // A repeated hand-over finds its events by primary key and queues nothing again.
  for (const stored of await deps.events.getMany([...docs.keys()])) docs.delete(stored._id);
  const fresh = [...docs.values()];
  // The fan-out is queued before the event is stored: a crash in between fails the hand-over,
  // which is repeated, and leaves at worst an entry without its event for a while (see
  // fanOut), never an event that nobody fans out.
  const entries = fresh.map((d) => fanoutEntry(d.product_id, d._id, now));
  await deps.queue.put(entries);
  await deps.events.insertMany(fresh);
  deps.dispatch(entries);
  return fresh.length;
}

/**
 * How long a fan-out entry whose event is not stored is kept. Its hand-over queued it and
 * is storing the event right now (the dispatcher may read the queue in between), or failed in
 * between and is repeated by its sender, which finds the entry and stores the event. Dropping
 * it sooner would leave that event stored with nobody to fan it out: never delivered. An entry
 * this old has no hand-over behind it any more (a later repeat queues a new one).
 */
export const UNSTORED_FANOUT_KEPT_MS = 10 * 60_000;

/**
 * Turns queued events (of one product) into one pending delivery per endpoint and event, each
 * with a queued first attempt, then drops the fan-out entries; returns the attempt entries.
 * Every step is idempotent, so a fan-out interrupted anywhere is completed by the next pass and
 * creates nothing twice. An entry whose event is not stored yet stays for a later pass (see
 * UNSTORED_FANOUT_KEPT_MS).
 */
export async function fanOut(deps: WebhooksDeps, entries: QueueEntry[]): Promise<QueueEntry[]> {
  const now = deps.now();
  const events = await deps.events.getMany(entries.map((e) => e.ref));
  const stored = new Set(events.map((e) => e._id));
  const done = entries.filter((e) => stored.has(e.ref) || e.due_at.getTime() <= now.getTime() - UNSTORED_FANOUT_KEPT_MS);
  const deliveries: DeliveryDoc[] = events.flatMap((event) =>
    event.endpoint_ids.map((endpointId) => ({
      _id: `whdel_${stableUuid(event._id, endpointId)}`,
      product_id: event.product_id,
      endpoint_id: endpointId,
      event_id: event._id,
      event_type: event.type,
      status: "pending" as const,
      status_code: 0,
      attempt: 0,
      created_at: now,
      completed_at: null,
      next_attempt_at: now,
      last_error: null,
    })),
  );
  const attempts = deliveries.map((d) => attemptEntry(d.product_id, d.endpoint_id, d._id, now));
  await deps.deliveries.ensureMany(deliveries);
  await deps.queue.put(attempts);
  await deps.queue.remove(done.map((e) => e._id));
  return attempts;
}
