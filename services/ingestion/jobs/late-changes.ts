import type { KeyedPayload } from "@meter/lib/jobs";
import type { IngestionDeps } from "../deps.ts";

export const LATE_CHANGES = "ingestion.late-changes";

/** How often every change still within the window is applied again (for stragglers). */
export const LATE_CHANGE_ROUND_MS = 5_000;

/**
 * The late-change follower (late-changes/follow.ts). Two jobs of this name at most, as for the
 * relay: key "every", repeating every LATE_CHANGE_ROUND_MS (one across replicas), and key
 * "kick", enqueued when a write meets a change this process had not seen (unique: a pending
 * kick absorbs the next ones). Lock lifetime 60 s; a worker that dies mid-round leaves moves
 * half done, which the next round (or any read) finishes: each move is guarded (move.ts).
 */
export function defineLateChanges(deps: IngestionDeps, round: () => Promise<number>): void {
  deps.scheduler.define<KeyedPayload>(
    LATE_CHANGES,
    async () => {
      // Logged, not thrown: a failed kick would be kept by Agenda and absorb every later kick.
      await round().catch((err: unknown) => deps.logger.warn({ err }, "late-change round failed; the next round retries"));
    },
    { lockLifetime: 60_000, concurrency: 1 },
  );
}

/** A round now unless a kick is already pending or running. */
export function kickLateChanges(deps: IngestionDeps): Promise<void> {
  return deps.scheduler.enqueue<KeyedPayload>(LATE_CHANGES, { key: "kick" }, new Date());
}

export function scheduleLateChanges(deps: IngestionDeps): Promise<void> {
  return deps.scheduler.every<KeyedPayload>(LATE_CHANGES, LATE_CHANGE_ROUND_MS, { key: "every" });
}
