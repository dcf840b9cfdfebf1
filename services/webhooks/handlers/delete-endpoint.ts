import type { ServiceImpl } from "@connectrpc/connect";
import type { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import type { WebhooksDeps } from "../deps.ts";
import { DELIVER_ATTEMPT } from "../jobs/deliver-attempt.ts";
import { endpointOf } from "./common.ts";

/**
 * Removes the endpoint, then its delivery log, then its pending attempt jobs, in that order: an
 * attempt already in flight records nothing (its delivery is gone, and records never upsert),
 * and a retry it schedules after the jobs were cancelled is cancelled by that attempt itself
 * when it finds its delivery gone (see runDeliverAttempt).
 */
export function deleteEndpoint(deps: WebhooksDeps): ServiceImpl<typeof WebhooksService>["deleteEndpoint"] {
  return async (req) => {
    const endpoint = await endpointOf(deps, req.productId, req.endpointId);
    await deps.endpoints.delete(req.productId, endpoint._id);
    const deliveries = await deps.deliveries.deleteForEndpoint(req.productId, endpoint._id);
    const jobs = await deps.scheduler.cancel(DELIVER_ATTEMPT, { endpointId: endpoint._id });
    deps.logger.info({ productId: req.productId, endpointId: endpoint._id, jobs, deliveries }, "webhook endpoint deleted");
    return {};
  };
}
