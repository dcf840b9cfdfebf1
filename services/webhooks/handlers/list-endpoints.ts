import type { ServiceImpl } from "@connectrpc/connect";
import type { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import type { WebhooksDeps } from "../deps.ts";
import { toEndpoint } from "./mapping.ts";

/** Oldest first; secrets are never part of the listing. */
export function listEndpoints(deps: WebhooksDeps): ServiceImpl<typeof WebhooksService>["listEndpoints"] {
  return async (req) => {
    return { endpoints: (await deps.endpoints.list(req.productId)).map(toEndpoint) };
  };
}
