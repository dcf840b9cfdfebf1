import type { KeyedPayload } from "@meter/lib/jobs";
import type { IngestionDeps } from "../deps.ts";
import { expireDue } from "../credits/expiry.ts";

export const CREDIT_EXPIRY = "ingestion.credit-expiry";

/**
 * The expiry sweep (credits/expiry.ts), one job across replicas: every `intervalMs` while an
 * hour with expiries is under way, else after a pause doubling up to IDLE_POLL_MAX_MS; idle,
 * a run is one read of the sweep's cursor. Lock lifetime 60 s; a worker that dies mid-run
 * leaves accounts half swept, which the next run finishes (each expiry is one conditional
 * write of its account, and copying it out is idempotent).
 */
export function defineCreditExpiry(deps: IngestionDeps): void {
  deps.scheduler.define<KeyedPayload>(
    CREDIT_EXPIRY,
    // Logged, not thrown: the next run retries.
    () => expireDue(deps).catch((err: unknown) => (deps.logger.warn({ err }, "credit expiry sweep failed; the next run retries"), true)),
    { lockLifetime: 60_000, concurrency: 1 },
  );
}

export function scheduleCreditExpiry(deps: IngestionDeps, intervalMs: number, idleMaxMs: number): Promise<void> {
  return deps.scheduler.every<KeyedPayload>(CREDIT_EXPIRY, intervalMs, { key: "every" }, idleMaxMs);
}
