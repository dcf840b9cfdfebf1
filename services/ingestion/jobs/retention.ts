import type { KeyedPayload } from "@meter/lib/jobs";
import type { IngestionDeps } from "../deps.ts";
import { runIngestionRetention } from "../retention.ts";

export const RETENTION = "ingestion.retention";

/** Daily, at a quiet hour (UTC), before the analytics and webhooks passes; one run across replicas. */
export const RETENTION_CRON = "15 3 * * *";

/**
 * The daily retention pass (retention.ts). Lock lifetime 30 minutes, never renewed: the pass
 * is five scans, each deleting in rounds by primary key. A worker that dies mid-run leaves
 * part of the deletions done; each step deletes by a cut-off and keeps what a reader or an
 * open job needs at every point, so the same job once its lock has expired, or the next
 * day's run, simply finishes them.
 */
export function defineRetention(deps: IngestionDeps): void {
  deps.scheduler.define<KeyedPayload>(
    RETENTION,
    async () => {
      const report = await runIngestionRetention(deps, deps.retention, deps.now());
      deps.logger.info({ report }, "ingestion retention done");
    },
    { lockLifetime: 30 * 60_000, concurrency: 1 },
  );
}

export function scheduleRetention(deps: IngestionDeps): Promise<void> {
  return deps.scheduler.every<KeyedPayload>(RETENTION, RETENTION_CRON, { key: "daily" });
}
