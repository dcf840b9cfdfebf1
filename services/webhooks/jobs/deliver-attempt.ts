import { webhookDeliveries } from "@meter/lib/metrics";
import type { Job } from "agenda";
import type { WebhooksDeps } from "../deps.ts";
import { API_VERSION, MAX_ATTEMPTS, RETRY_DELAYS_MS, type Envelope } from "../events.ts";
import type { DeliveryDoc } from "../store/deliveries.ts";
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

export async function runDeliverAttempt(deps: WebhooksDeps, data: DeliverAttemptPayload): Promise<void> {
  const { deliveryId, attempt } = data;
  const d = await deps.deliveries.get(deliveryId);
  if (!d || d.status !== "pending" || d.attempt >= attempt) return;
  // Lease: longer than one attempt can take, so a live holder is never overtaken.
  const token = await deps.claims.claim(data.key, deps.attemptTimeoutMs + 60_000, deps.now());
  if (!token) return;
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
    const secret = deps.secrets.open(endpoint.secret_sealed, endpoint._id);
    const result = await deps.sender.send(endpoint.url, secret, envelopeOf(event));
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
    // Not an answer from the receiver (e.g. the database failed): let the job's retry redo it.
    await deps.claims.release(data.key, token);
    throw err;
  }
}

export function defineDeliverAttempt(deps: WebhooksDeps): void {
  deps.scheduler.define<DeliverAttemptPayload>(DELIVER_ATTEMPT, (job: Job<DeliverAttemptPayload>) => runDeliverAttempt(deps, job.attrs.data), {
    concurrency: 20,
    lockLifetime: deps.attemptTimeoutMs + 30_000,
  });
}
