import type { Job } from "agenda";
import type { KeyedPayload } from "@meter/lib/jobs";
import type { IngestionDeps } from "../deps.ts";
import type { Relay } from "../relay/outbox.ts";

export const RELAY = "ingestion.relay";

/**
 * One relay round (relay/outbox.ts): the recovery sweep, then every outbox drained to its
 * peer. Two jobs of this name exist at most, told apart by their key: "every", repeating every
 * RELAY_INTERVAL_MS (one across replicas) while rounds find work, else after a pause growing up
 * to IDLE_POLL_MAX_MS (JobScheduler.every), and "kick", enqueued when a request wrote outbox
 * entries so that handovers stay prompt (unique: a kick pending or running absorbs the next
 * ones; entries written meanwhile are left to the next run of either, which the kick brings
 * within the interval).
 *
 * Lock lifetime `lockMs` (60 s), renewed after every entry handed over (`touch`), so only a
 * silent worker loses it. A worker that dies mid-run leaves the job locked until then; the
 * other job of the name still runs meanwhile. Entries are deleted only after their peer
 * acknowledged them, so the entry the dead worker was sending is sent again by the next run
 * (receivers are idempotent on the ids), and a job it was completing is completed again by
 * the sweep (idempotent throughout). Nothing is lost or counted twice.
 */
export function defineRelay(deps: IngestionDeps, relay: Relay, lockMs: number): void {
  deps.scheduler.define<KeyedPayload>(
    RELAY,
    // round() logs its failures and leaves the work in place for the next run: a failed kick
    // would be kept by Agenda and absorb every later kick.
    (job: Job<KeyedPayload>) => relay.round(() => job.touch()),
    { lockLifetime: lockMs, concurrency: 1 },
  );
}

/** Runs a relay round now unless a kick is already pending or running. */
export function kickRelay(deps: IngestionDeps): Promise<void> {
  return deps.scheduler.enqueue<KeyedPayload>(RELAY, { key: "kick" }, new Date());
}

/** The repeating round, every `intervalMs` while it finds work, else at most `idleMaxMs` apart (one job across replicas). */
export function scheduleRelay(deps: IngestionDeps, intervalMs: number, idleMaxMs: number): Promise<void> {
  return deps.scheduler.every<KeyedPayload>(RELAY, intervalMs, { key: "every" }, idleMaxMs);
}
