import type { KeyedPayload } from "@meter/lib/jobs";
import type { IngestionDeps } from "../deps.ts";
import type { Relay } from "../relay/outbox.ts";

export const RELAY = "ingestion.relay";

/**
 * One relay round (relay/outbox.ts): the recovery sweep, then every outbox drained to its
 * peer. The job "every" repeats every RELAY_INTERVAL_MS (one across replicas) while rounds find
 * work, else after a pause growing up to IDLE_POLL_MAX_MS (JobScheduler.every); a request that
 * wrote outbox entries kicks a round in its own process (JobScheduler.kick: nothing saved), so
 * that handovers stay prompt. Rounds of one process go one at a time; those of several
 * replicas may meet, which the handover tolerates (below).
 *
 * Lock lifetime `lockMs` (60 s), renewed while entries are handed over, so only a silent worker
 * loses it. A worker that dies mid-run leaves the job locked until then; kicks of the other
 * replicas still run meanwhile. Entries are deleted only after their peer acknowledged them, so
 * the entry the dead worker was sending is sent again by the next run (receivers are idempotent
 * on the ids), and a job it was completing is completed again by the sweep (idempotent
 * throughout). Nothing is lost or counted twice.
 */
export function defineRelay(deps: IngestionDeps, relay: Relay, lockMs: number): void {
  // round() logs its failures and leaves the work in place for the next run.
  deps.scheduler.defineKicked(RELAY, (renew) => relay.round(renew), lockMs);
}

/**
 * How long a kicked round waits (ms). A request kicks once its batch is stored, when the
 * batches of the other connections are usually being answered and the next ones parsed: the
 * process's busiest moment, while the database's writer waits for them. A round started then
 * made that moment longer; started a little later it runs while the next batches are being
 * stored, hands over the entries of several requests at once, and the events reach analytics
 * and webhooks this much later (docs/benchmarks.md, "Ingestion").
 */
const KICK_DELAY_MS = 150;

/** Runs a relay round in this process soon (KICK_DELAY_MS), or once more after the one in progress. */
export function kickRelay(deps: IngestionDeps): void {
  deps.scheduler.kickSoon(RELAY, KICK_DELAY_MS);
}

/** The repeating round, every `intervalMs` while it finds work, else at most `idleMaxMs` apart (one job across replicas). */
export function scheduleRelay(deps: IngestionDeps, intervalMs: number, idleMaxMs: number): Promise<void> {
  return deps.scheduler.every<KeyedPayload>(RELAY, intervalMs, { key: "every" }, idleMaxMs);
}
