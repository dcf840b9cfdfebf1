import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import type { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import type { WebhooksDeps } from "../deps.ts";
import { API_VERSION, TEST_EVENT_TYPE } from "../domain/events.ts";
import { rpcError } from "@meter/lib/errors";
import { endpointOf } from "./common.ts";

/** Tests of one product's endpoints a replica runs at once. */
export const TESTS_IN_FLIGHT = 4;

/**
 * Sends one "webhook.test" envelope synchronously, signed like every delivery, whether or not
 * the endpoint is enabled. It is not retried and not written to the delivery log.
 */
export function testEndpoint(deps: WebhooksDeps): ServiceImpl<typeof WebhooksService>["testEndpoint"] {
  // Tests in flight per product in this replica: they skip the dispatcher's caps (a test is
  // answered at once), so a product testing an endpoint that stalls, in a loop, would otherwise
  // hold the shared sender's sockets by the thousand.
  const inFlight = new Map<string, number>();
  return async (req) => {
    const endpoint = await endpointOf(deps, req.productId, req.endpointId);
    const held = inFlight.get(req.productId) ?? 0;
    if (held >= TESTS_IN_FLIGHT) throw rpcError.busy(`${TESTS_IN_FLIGHT} endpoint tests of this product are still waiting for their receivers; try again once they answer`, 1);
    inFlight.set(req.productId, held + 1);
    try {
      return await sendTest(deps, req.productId, endpoint);
    } finally {
      const left = (inFlight.get(req.productId) ?? 1) - 1;
      if (left > 0) inFlight.set(req.productId, left);
      else inFlight.delete(req.productId);
    }
  };
}

async function sendTest(deps: WebhooksDeps, productId: string, endpoint: Awaited<ReturnType<typeof endpointOf>>) {
  const result = await deps.sender.send(endpoint.url, deps.secrets.open(endpoint.secret_sealed, endpoint._id), {
    id: `whevt_${randomUUID()}`,
    type: TEST_EVENT_TYPE,
    api_version: API_VERSION,
    created_at: deps.now().toISOString(),
    product_id: productId,
    data: {
      endpoint_id: endpoint._id,
      message: "This is a test event. Verify its signature the way you verify every webhook.",
    },
  });
  return { success: result.ok, statusCode: result.statusCode, responseTimeMs: result.responseTimeMs, error: result.ok ? undefined : result.error };
}
