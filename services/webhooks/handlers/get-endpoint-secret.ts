import type { ServiceImpl } from "@connectrpc/connect";
import type { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import type { WebhooksDeps } from "../deps.ts";
import { endpointOf } from "./common.ts";

export function getEndpointSecret(deps: WebhooksDeps): ServiceImpl<typeof WebhooksService>["getEndpointSecret"] {
  return async (req) => {
    const endpoint = await endpointOf(deps, req.productId, req.endpointId);
    return { secret: deps.secrets.open(endpoint.secret_sealed, endpoint._id) };
  };
}
