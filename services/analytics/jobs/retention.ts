import type { KeyedPayload } from "@meter/lib/jobs";
import type { RetentionPolicy } from "../domain/retention-policy.ts";
import { runRetention } from "../flows/retention.ts";
import type { AnalyticsDeps } from "../deps.ts";

export const RETENTION = "analytics.retention";

/** Daily, at a quiet hour (UTC), one run across replicas. */
export const RETENTION_CRON = "30 3 * * *";

/**
 * Deletes what the retention policy no longer keeps (flows/retention.ts). Lock lifetime 10 minutes,
 * renewed never: a pass is a few deleteMany scans. A worker that dies mid-run leaves part of
 * the deletions done; every step is a delete by a cut-off, so the next run (the same job once
 * its lock has expired, or tomorrow's) simply finishes them.
 */
export function defineRetention(deps: AnalyticsDeps, policy: RetentionPolicy): void {
  deps.scheduler.define<KeyedPayload>(
    RETENTION,
    async () => {
      const report = await runRetention(deps, policy, deps.now());
      deps.logger.info({ report }, "analytics retention done");
    },
    { lockLifetime: 10 * 60_000, concurrency: 1 },
  );
}

export function scheduleRetention(deps: AnalyticsDeps): Promise<void> {
  return deps.scheduler.every<KeyedPayload>(RETENTION, RETENTION_CRON, { key: "daily" });
}
