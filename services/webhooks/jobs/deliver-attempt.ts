import { webhookDeliveries } from "@meter/lib/metrics";
import type { Job } from "agenda";
import type { WebhooksDeps } from "../deps.ts";
import { API_VERSION, MAX_ATTEMPTS, RETRY_DELAYS_MS, type Envelope } from "../events.ts";
import type { SendResult } from "../sender.ts";
import type { DeliveryDoc } from "../store/deliveries.ts";
import type { EndpointDoc } from "../store/endpoints.ts";
import type { EventDoc } from "../store/events.ts";

export const DELIVER_ATTEMPT = "webhooks.deliver-attempt";

/**
 * One attempt of one delivery.
 * Idempotency key: "deliver:<delivery id>:<attempt>". The job is unique on it, the attempt's
 * effect is claimed under it (ClaimStore), and its outcome is recorded only while the delivery
 * still stands at attempt - 1; a replayed or duplicated job therefore sends nothing twice.
 */
export interface DeliverAttemptPayload {
  key: string;
  deliveryId: string;
  productId: string;
  endpointId: string;
  attempt: number;
}

export function attemptKey(deliveryId: string, attempt: number): string {
  return `deliver:${deliveryId}:${attempt}`;
}

/** Delay before attempt `n` (1-based), scaled. */
export function delayBefore(attempt: number, timeScale: number): number {
  return Math.round((RETRY_DELAYS_MS[attempt - 1] ?? 0) * timeScale);
}

export async function scheduleAttempt(deps: WebhooksDeps, d: DeliveryDoc, attempt: number, at: Date): Promise<void> {
  const payload: DeliverAttemptPayload = {
    key: attemptKey(d._id, attempt),
    deliveryId: d._id,
    productId: d.product_id,
    endpointId: d.endpoint_id,
    attempt,
  };
  await deps.scheduler.enqueue(DELIVER_ATTEMPT, payload, at);
}

export async function cancelAttempt(deps: WebhooksDeps, deliveryId: string, attempt: number): Promise<void> {
  await deps.scheduler.cancel(DELIVER_ATTEMPT, { key: attemptKey(deliveryId, attempt) });
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

/** Raised when another runner holds this attempt's claim: the job is retried, never dropped. */
class AttemptBusy extends Error {
  constructor(key: string) {
    super(`attempt ${key} is held by another runner; retrying after its lease`);
  }
}

/**
 * Job-level retry of an attempt that could not run or be recorded (database unreachable, claim
 * held by a runner that may have died): 5 s doubling up to 5 min (scaled), without end, so a
 * pending delivery always has a job that will move it on. A replay that finds the delivery
 * already past this attempt does nothing.
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

export async function runDeliverAttempt(deps: WebhooksDeps, data: DeliverAttemptPayload): Promise<void> {
  const { deliveryId, attempt } = data;
  const d = await deps.deliveries.get(deliveryId);
  if (!d || d.status !== "pending" || d.attempt >= attempt) return;
  // Lease: longer than one attempt can take, so a live holder is never overtaken.
  const token = await deps.claims.claim(data.key, deps.attemptTimeoutMs + 60_000, deps.now());
  // Held: a live holder records the outcome and schedules the next attempt; a dead one's lease
  // runs out. Either way this job comes back later (retryDelay) instead of ending here.
  if (!token) throw new AttemptBusy(data.key);
  try {
    const endpoint = await deps.endpoints.get(d.product_id, d.endpoint_id);
    const event = endpoint ? await deps.events.get(d.event_id) : null;
    if (!endpoint || !event) {
      // Endpoint deleted (its log goes with it): drop a delivery re-created by a late hand-over.
      await deps.deliveries.remove(d._id);
      return;
    }
    if (!endpoint.enabled) {
      await deps.deliveries.abandon(d._id, "endpoint disabled", deps.now());
      return;
    }
    const result = await send(deps, endpoint, event);
    webhookDeliveries.inc({ outcome: result.ok ? "success" : attempt >= MAX_ATTEMPTS ? "failed" : "retry", attempt: String(attempt) });
    const now = deps.now();
    const common = { status_code: result.statusCode, last_error: result.error ?? null };
    if (result.ok) {
      await deps.deliveries.record(d._id, attempt, { ...common, status: "success", completed_at: now, next_attempt_at: null });
    } else if (attempt >= MAX_ATTEMPTS) {
      await deps.deliveries.record(d._id, attempt, { ...common, status: "failed", completed_at: now, next_attempt_at: null });
    } else {
      const next = new Date(now.getTime() + delayBefore(attempt + 1, deps.timeScale));
      // The next attempt is scheduled before this one is recorded: a crash in between replays
      // this attempt (at-least-once) instead of losing the delivery.
      await scheduleAttempt(deps, d, attempt + 1, next);
      const recorded = await deps.deliveries.record(d._id, attempt, { ...common, next_attempt_at: next });
      // The delivery went away or ended while this attempt was in flight (endpoint deleted or
      // disabled): the retry just scheduled must not outlive it.
      if (!recorded) await cancelAttempt(deps, d._id, attempt + 1);
    }
    deps.logger.info(
      { deliveryId: d._id, endpointId: d.endpoint_id, attempt, statusCode: result.statusCode, ok: result.ok, error: result.error },
      "webhook attempt",
    );
  } catch (err) {
    // Not an answer from the receiver (e.g. the database failed): the job is retried
    // (retryDelay) and redoes the attempt. Releasing may fail too; the lease then runs out.
    await deps.claims.release(data.key, token).catch(() => undefined);
    throw err;
  }
}

export function defineDeliverAttempt(deps: WebhooksDeps): void {
  deps.scheduler.define<DeliverAttemptPayload>(DELIVER_ATTEMPT, (job: Job<DeliverAttemptPayload>) => runDeliverAttempt(deps, job.attrs.data), {
    concurrency: 20,
    lockLifetime: deps.attemptTimeoutMs + 30_000,
    backoff: (ctx) => retryDelay(ctx.attempt, deps.timeScale),
  });
}
