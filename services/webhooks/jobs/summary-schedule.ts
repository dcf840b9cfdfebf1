import type { WebhooksDeps } from "../deps.ts";
import { previousPeriod, SUMMARY_CRON, SUMMARY_TYPES, type SummaryType } from "../domain/summary-windows.ts";
import { SUMMARY_PRODUCT, summaryKey, type SummaryProductPayload } from "./summary-product.ts";

/**
 * The three repeating summary schedules (06:00 UTC daily, Mondays, the 1st), one Agenda job
 * each: "webhooks.summary-schedule.<type>". Each run hands every product with an enabled
 * endpoint subscribed to that summary a SummaryProduct job for the period just ended.
 * Idempotency key: "summary-schedule:<type>" (one repeating job per type across replicas);
 * a run that happens twice enqueues the same per-product keys, so nothing is sent twice.
 */
export interface SummarySchedulePayload {
  key: string;
  summaryType: SummaryType;
}

export const summaryScheduleName = (type: SummaryType) => `webhooks.summary-schedule.${type}`;

/** Enqueues, to run at once, the per-product summaries of the period before `now`; returns how many products. */
export async function fanOutSummaries(deps: WebhooksDeps, type: SummaryType, now: Date): Promise<number> {
  const { start, end } = previousPeriod(type, now);
  const products = await deps.endpoints.productsSubscribedTo(`usage.summary.${type}`);
  for (const productId of products) {
    const payload: SummaryProductPayload = {
      key: summaryKey(productId, type, start),
      productId,
      summaryType: type,
      periodStart: start.toISOString(),
      periodEnd: end.toISOString(),
    };
    await deps.scheduler.enqueue(SUMMARY_PRODUCT, payload, deps.now());
  }
  return products.length;
}

export function defineSummarySchedules(deps: WebhooksDeps): void {
  for (const type of SUMMARY_TYPES) {
    deps.scheduler.define<SummarySchedulePayload>(summaryScheduleName(type), async () => {
      await fanOutSummaries(deps, type, deps.now());
    });
  }
}

export async function scheduleSummaries(deps: WebhooksDeps): Promise<void> {
  for (const type of SUMMARY_TYPES) {
    await deps.scheduler.every<SummarySchedulePayload>(summaryScheduleName(type), SUMMARY_CRON[type], {
      key: `summary-schedule:${type}`,
      summaryType: type,
    });
  }
}
