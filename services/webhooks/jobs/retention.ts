import type { KeyedPayload } from "@meter/lib/jobs";
import { DAY_MS } from "@meter/lib/time";
import type { WebhooksDeps } from "../deps.ts";

export const RETENTION = "webhooks.retention";

/** Daily, at a quiet hour (UTC) and before the 06:00 summaries, one run across replicas. */
export const RETENTION_CRON = "45 3 * * *";

/** Failed one-off jobs are kept this long for inspection, then purged. */
const ENDED_JOB_DAYS = 7;

export interface WebhooksRetentionReport {
  deliveries: number;
  events: number;
  claims: number;
  jobs: number;
}

/**
 * One retention pass (README, "Retention"): ended deliveries older than the log window, the
 * events none of the remaining deliveries needs, expired claims, and failed jobs. Each step is
 * a delete by a cut-off, so a pass interrupted anywhere is finished by the next one.
 */
export async function runWebhooksRetention(deps: WebhooksDeps, now: Date): Promise<WebhooksRetentionReport> {
  const cutoff = new Date(now.getTime() - deps.logDays * DAY_MS);
  const deliveries = await deps.deliveries.deleteEndedBefore(cutoff);
  // A pending delivery still builds its body from its event at every attempt, and a queued
  // fan-out still reads its event.
  const keep = [...(await deps.deliveries.eventIdsBefore(cutoff)), ...(await deps.queue.fanoutEventIds())];
  const events = await deps.events.deleteBefore(cutoff, keep);
  const claims = await deps.claims.sweepExpired(now);
  const jobs = await deps.scheduler.purgeEnded(new Date(now.getTime() - ENDED_JOB_DAYS * DAY_MS));
  return { deliveries, events, claims, jobs };
}

/**
 * The daily retention job. Lock lifetime 10 minutes (a pass is four deleteMany). A worker
 * that dies mid-run leaves the rest of the deletions to the same job once its lock has
 * expired, or to the next day's run; nothing kept is ever touched.
 */
export function defineRetention(deps: WebhooksDeps): void {
  deps.scheduler.define<KeyedPayload>(
    RETENTION,
    async () => {
      const report = await runWebhooksRetention(deps, deps.now());
      deps.logger.info({ report }, "webhooks retention done");
    },
    { lockLifetime: 10 * 60_000, concurrency: 1 },
  );
}

export function scheduleRetention(deps: WebhooksDeps): Promise<void> {
  return deps.scheduler.every<KeyedPayload>(RETENTION, RETENTION_CRON, { key: "daily" });
}
