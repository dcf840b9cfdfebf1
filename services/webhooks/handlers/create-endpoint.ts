import { v7 as uuidv7 } from "uuid";
import type { ServiceImpl } from "@connectrpc/connect";
import type { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import type { WebhooksDeps } from "../deps.ts";
import { toEndpoint } from "../mapping.ts";
import { generateSecret } from "../secrets.ts";
import { checkDescription, checkEvents, checkUrl, requireProduct } from "./common.ts";

export function createEndpoint(deps: WebhooksDeps): ServiceImpl<typeof WebhooksService>["createEndpoint"] {
  return async (req) => {
    requireProduct(req.productId);
    const subscribed = checkEvents(req.subscribedEvents);
    const description = checkDescription(req.description);
    const url = await checkUrl(deps, req.url);
    const id = uuidv7(); // time-ordered: endpoints list in creation order even within one millisecond
    const secret = generateSecret();
    const now = deps.now();
    const doc = {
      _id: id,
      product_id: req.productId,
      url,
      subscribed_events: subscribed,
      description,
      enabled: true,
      secret_sealed: deps.secrets.seal(secret, id),
      created_at: now,
      updated_at: now,
    };
    await deps.endpoints.insert(doc);
    deps.logger.info({ productId: req.productId, endpointId: id }, "webhook endpoint created");
    return { endpoint: toEndpoint(doc), secret };
  };
}
