import type { KeyedPayload } from "@meter/lib/jobs";
import type { IngestionDeps } from "../deps.ts";

export const LATE_CHANGES = "ingestion.late-changes";

/** How often every change still within the window is applied again (for stragglers). */
export const LATE_CHANGE_ROUND_MS = 5_000;

/**
 * The late-change follower (late-changes/follow.ts). Two jobs of this name at most, as for the
 * relay: key "every", repeating every LATE_CHANGE_ROUND_MS (one across replicas) while some user
 * is followed, its poll resting up to IDLE_POLL_MAX_MS while nobody is (an idle service's
 * commands); and a round kicked in this process (JobScheduler.kick: nothing saved) when a write
 * or a read meets a change this process had not seen, which also brings the poll back to its
 * pace. Lock lifetime 60 s; a worker that dies mid-round leaves moves half done, which the
 * next round (or any read) finishes: each move is guarded (move.ts).
 */
export function defineLateChanges(deps: IngestionDeps, round: () => Promise<{ following: number }>): void {
  deps.scheduler.defineKicked(
    LATE_CHANGES,
    async () => {
      try {
        return (await round()).following > 0;
      } catch (err) {
        // Logged, not thrown: the repeating run retries.
        deps.logger.warn({ err }, "late-change round failed; the next round retries");
        return true;
      }
    },
    60_000,
  );
}

/** A round in this process now, or once more after the one in progress. */
export function kickLateChanges(deps: IngestionDeps): void {
  deps.scheduler.kick(LATE_CHANGES);
}

export function scheduleLateChanges(deps: IngestionDeps, idleMaxMs: number): Promise<void> {
  return deps.scheduler.every<KeyedPayload>(LATE_CHANGES, LATE_CHANGE_ROUND_MS, { key: "every" }, idleMaxMs);
}
