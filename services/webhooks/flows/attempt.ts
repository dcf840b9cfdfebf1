import { webhookDeliveries } from "@meter/lib/metrics";
import type { WebhooksDeps } from "../deps.ts";
import { API_VERSION, MAX_ATTEMPTS, RETRY_DELAYS_MS, type Envelope } from "../domain/events.ts";
import type { SendResult } from "../adapters/sender.ts";
import type { EndpointDoc } from "../store/endpoints.ts";
import type { EventDoc } from "../store/events.ts";
import type { QueueEntry } from "../store/queue.ts";

/** The claim that makes attempt `n` of a delivery go out once: "deliver:<delivery id>:<n>". */
export function attemptKey(deliveryId: string, attempt: number): string {
  return `deliver:${deliveryId}:${attempt}`;
}

/** Delay before attempt `n` (1-based), scaled. */
export function delayBefore(attempt: number, timeScale: number): number {
  return Math.round((RETRY_DELAYS_MS[attempt - 1] ?? 0) * timeScale);
}

export function envelopeOf(event: EventDoc): Envelope {
  return {
    id: event._id,
    type: event.type,
    api_version: API_VERSION,
    created_at: event.created_at.toISOString(),
    product_id: event.product_id,
    data: JSON.parse(event.data) as Record<string, unknown>,
  };
}

/**
 * Wait before an attempt that could not run or be recorded (database unreachable, claim held
 * by a runner that may have died) is tried again: 5 s doubling up to 5 min (scaled), without
 * end, so a pending delivery always comes back. A retry that finds the delivery already past
 * this attempt does nothing.
 */
export function retryDelay(failures: number, timeScale: number): number {
  return Math.round(Math.min(5_000 * 2 ** Math.min(failures - 1, 10), 5 * 60_000) * timeScale);
}

/**
 * Sends the attempt. Anything that stops the request from going out as it should (a secret
 * that cannot be opened, a stored event that cannot be read) is a failed attempt like a
 * receiver error, with status code 0 and the reason in last_error: it follows the retry table.
 */
async function send(deps: WebhooksDeps, endpoint: EndpointDoc, event: EventDoc): Promise<SendResult> {
  let secret: string;
  let envelope: Envelope;
  try {
    secret = deps.secrets.open(endpoint.secret_sealed, endpoint._id);
  } catch (err) {
    deps.logger.error({ err, endpointId: endpoint._id }, "webhook signing secret cannot be opened");
    return { ok: false, statusCode: 0, responseTimeMs: 0, error: "not sent: the signing secret could not be opened" };
  }
  try {
    envelope = envelopeOf(event);
  } catch (err) {
    deps.logger.error({ err, eventId: event._id }, "webhook event cannot be read");
    return { ok: false, statusCode: 0, responseTimeMs: 0, error: "not sent: the event could not be read" };
  }
  return deps.sender.send(endpoint.url, secret, envelope);
}

/**
 * Another runner holds the attempt's claim, until `busyUntil` (null: it was released meanwhile).
 * A holder that died, or a claim written while its answer was lost (the database killed in
 * between), keeps it until then: nobody else could release it.
 */
export interface Busy {
  busyUntil: Date | null;
}

/**
 * The next attempt of the delivery an attempt entry points at. The delivery is the truth: an
 * entry left behind by a crash (delivery ended, or its next attempt later) is corrected here
 * and nothing is sent. Resolves when the entry is due next (null: it is gone), or `Busy` when
 * another runner holds the attempt's claim: the caller tries again later (retryDelay), at the
 * latest when that claim lapses. Throws when the database fails; the claim is then released.
 */
export async function runAttempt(deps: WebhooksDeps, entry: QueueEntry): Promise<Date | null | Busy> {
  const d = await deps.deliveries.get(entry.ref);
  if (!d || d.status !== "pending") {
    await deps.queue.remove([entry._id]);
    return null;
  }
  const dueAt = d.next_attempt_at ?? d.created_at;
  if (dueAt > deps.now()) {
    await deps.queue.reschedule(entry._id, dueAt);
    return dueAt;
  }
  const attempt = d.attempt + 1;
  const key = attemptKey(d._id, attempt);
  // Lease: longer than one attempt can take, so a live holder is never overtaken; a dead
  // holder's runs out and the attempt is then sent again (at-least-once, same delivery id).
  const token = await deps.claims.claim(key, deps.attemptTimeoutMs + 60_000, deps.now());
  if (!token) return { busyUntil: await deps.claims.heldUntil(key) };
  try {
    const endpoint = await deps.endpoints.get(d.product_id, d.endpoint_id);
    const event = endpoint ? await deps.events.get(d.event_id) : null;
    if (!endpoint || !event) {
      // Endpoint deleted (its log goes with it): drop a delivery re-created by a late fan-out.
      await deps.deliveries.remove(d._id);
      await deps.queue.remove([entry._id]);
      return null;
    }
    // An endpoint receives only the types it subscribes to, while enabled (SPEC): a change of
    // either since the event was fanned out ends its pending deliveries.
    const ended = !endpoint.enabled ? "endpoint disabled" : !endpoint.subscribed_events.includes(event.type) ? `endpoint no longer subscribed to ${event.type}` : null;
    if (ended) {
      await deps.deliveries.abandon(d._id, ended, deps.now());
      await deps.queue.remove([entry._id]);
      return null;
    }
    const result = await send(deps, endpoint, event);
    webhookDeliveries.inc({ outcome: result.ok ? "success" : attempt >= MAX_ATTEMPTS ? "failed" : "retry", attempt: String(attempt) });
    const now = deps.now();
    const common = { status_code: result.statusCode, last_error: result.error ?? null };
    // The outcome is recorded on the delivery first, then the entry follows it: a crash in
    // between leaves an entry that the next pick corrects from the delivery. A crash before
    // the record replays this attempt once the claim's lease runs out.
    let next: Date | null = null;
    if (result.ok || attempt >= MAX_ATTEMPTS) {
      const status = result.ok ? "success" : "failed";
      await deps.deliveries.record(d._id, attempt, { ...common, status, completed_at: now, next_attempt_at: null });
      await deps.queue.remove([entry._id]);
    } else {
      next = new Date(now.getTime() + delayBefore(attempt + 1, deps.timeScale));
      // Not recorded: the delivery went away or ended while this attempt was in flight
      // (endpoint deleted or disabled); the entry, left due, is dropped at its next pick.
      if (await deps.deliveries.record(d._id, attempt, { ...common, next_attempt_at: next })) await deps.queue.reschedule(entry._id, next);
      else next = now;
    }
    deps.logger.info(
      { deliveryId: d._id, endpointId: d.endpoint_id, attempt, statusCode: result.statusCode, ok: result.ok, error: result.error },
      "webhook attempt",
    );
    return next;
  } catch (err) {
    // Not an answer from the receiver (e.g. the database failed): the attempt is run again
    // later and redoes it. Releasing may fail too; the lease then runs out.
    await deps.claims.release(key, token).catch(() => undefined);
    throw err;
  }
}
