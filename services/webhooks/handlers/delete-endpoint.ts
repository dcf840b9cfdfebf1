import type { ServiceImpl } from "@connectrpc/connect";
import type { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import type { WebhooksDeps } from "../deps.ts";
import { endpointOf } from "./common.ts";

/**
 * Removes the endpoint, then its delivery log, then its queued attempts, in that order: an
 * attempt already in flight records nothing (its delivery is gone, and records never upsert),
 * and a delivery that a fan-out in progress creates afterwards is removed by its first attempt,
 * which finds the endpoint gone and sends nothing (see runAttempt).
 */
export function deleteEndpoint(deps: WebhooksDeps): ServiceImpl<typeof WebhooksService>["deleteEndpoint"] {
  return async (req) => {
    const endpoint = await endpointOf(deps, req.productId, req.endpointId);
    await deps.endpoints.delete(req.productId, endpoint._id);
    const deliveries = await deps.deliveries.deleteForEndpoint(req.productId, endpoint._id);
    const queued = await deps.queue.removeForEndpoint(endpoint._id);
    deps.logger.info({ productId: req.productId, endpointId: endpoint._id, queued, deliveries }, "webhook endpoint deleted");
    return {};
  };
}
