import type { Job } from "agenda";
import { constant } from "agenda";
import type { WebhooksDeps } from "../deps.ts";
import { recordEvents } from "../flows/emit.ts";
import type { SummaryType } from "../domain/summary-windows.ts";

export const SUMMARY_PRODUCT = "webhooks.summary-product";
export const SUMMARY_TOP_USERS = 10;
/** When analytics cannot answer, the summary is retried this often (scaled), this many times. */
export const SUMMARY_RETRY_MS = 5 * 60_000;
export const SUMMARY_MAX_RETRIES = 72;

/**
 * The summary of one product for one period.
 * Idempotency key: "summary:<product>:<type>:<period start ISO>", which is also the event key,
 * so the event (unique on product and key) is emitted once however often the job runs.
 */
export interface SummaryProductPayload {
  key: string;
  productId: string;
  summaryType: SummaryType;
  periodStart: string;
  periodEnd: string;
}

export function summaryKey(productId: string, type: SummaryType, periodStart: Date): string {
  return `summary:${productId}:${type}:${periodStart.toISOString()}`;
}

export async function runSummaryProduct(deps: WebhooksDeps, p: SummaryProductPayload): Promise<void> {
  if (await deps.events.exists(p.productId, p.key)) return;
  const start = new Date(p.periodStart);
  const end = new Date(p.periodEnd);
  // Throws when analytics is unavailable; the job is then retried later. Zeros are never sent.
  const r = await deps.analytics.windowReport(p.productId, start, end, SUMMARY_TOP_USERS);
  await recordEvents(deps, [{
    productId: p.productId,
    type: `usage.summary.${p.summaryType}`,
    key: p.key,
    data: {
      summary_type: p.summaryType,
      period_start: start.toISOString(),
      period_end: end.toISOString(),
      active_users: r.activeUsers,
      total_cost: r.totalCost,
      total_tokens: r.totalTokens,
      total_events: r.totalEvents,
      soft_gates: r.softGates,
      hard_gates: r.hardGates,
      top_users: r.topUsers.map((u) => ({ user_id: u.userId, cost: u.cost, tokens: u.tokens })),
    },
  }]);
}

export function defineSummaryProduct(deps: WebhooksDeps): void {
  deps.scheduler.define<SummaryProductPayload>(SUMMARY_PRODUCT, (job: Job<SummaryProductPayload>) => runSummaryProduct(deps, job.attrs.data), {
    concurrency: 5,
    backoff: constant({ delay: Math.max(1, Math.round(SUMMARY_RETRY_MS * deps.timeScale)), maxRetries: SUMMARY_MAX_RETRIES }),
  });
}
