import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import type { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import type { WebhooksDeps } from "../deps.ts";
import { API_VERSION, TEST_EVENT_TYPE } from "../domain/events.ts";
import { endpointOf } from "./common.ts";

/**
 * Sends one "webhook.test" envelope synchronously, signed like every delivery, whether or not
 * the endpoint is enabled. It is not retried and not written to the delivery log.
 */
export function testEndpoint(deps: WebhooksDeps): ServiceImpl<typeof WebhooksService>["testEndpoint"] {
  return async (req) => {
    const endpoint = await endpointOf(deps, req.productId, req.endpointId);
    const result = await deps.sender.send(endpoint.url, deps.secrets.open(endpoint.secret_sealed, endpoint._id), {
      id: `whevt_${randomUUID()}`,
      type: TEST_EVENT_TYPE,
      api_version: API_VERSION,
      created_at: deps.now().toISOString(),
      product_id: req.productId,
      data: {
        endpoint_id: endpoint._id,
        message: "This is a test event. Verify its signature the way you verify every webhook.",
      },
    });
    return { success: result.ok, statusCode: result.statusCode, responseTimeMs: result.responseTimeMs };
  };
}
