import type { ServiceImpl } from "@connectrpc/connect";
import type { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { rpcError } from "@meter/lib/errors";
import type { WebhooksDeps } from "../deps.ts";
import { generateSecret } from "../domain/secrets.ts";
import { endpointOf } from "./common.ts";

/** The new secret replaces the old one in place: every later attempt, retries included, signs with it. */
export function rotateEndpointSecret(deps: WebhooksDeps): ServiceImpl<typeof WebhooksService>["rotateEndpointSecret"] {
  return async (req) => {
    const endpoint = await endpointOf(deps, req.productId, req.endpointId);
    const secret = generateSecret();
    const updated = await deps.endpoints.update(req.productId, endpoint._id, { secret_sealed: deps.secrets.seal(secret, endpoint._id) });
    if (!updated) throw rpcError.notFound(`webhook endpoint ${req.endpointId} not found`);
    deps.logger.info({ productId: req.productId, endpointId: endpoint._id }, "webhook secret rotated");
    return { secret };
  };
}
