import { v7 as uuidv7 } from "uuid";
import type { ServiceImpl } from "@connectrpc/connect";
import type { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { rpcError } from "@meter/lib/errors";
import type { WebhooksDeps } from "../deps.ts";
import { toEndpoint } from "./mapping.ts";
import { generateSecret } from "../domain/secrets.ts";
import { checkDescription, checkEvents, checkUrl } from "./common.ts";

/** Endpoints one product may have (docs/operations.md, "Limits"); each event fans out to at most this many. */
export const MAX_ENDPOINTS_PER_PRODUCT = 20;

/**
 * Refuses an endpoint beyond the limit with ABORTED (HTTP 409: the product's current state
 * conflicts with adding one; deleting one makes room). The new endpoint is inserted first and
 * counted after: of creates racing for the last place, the last count to run sees every insert
 * and gives its own back, so the limit is never exceeded (a race may refuse both; retrying
 * succeeds).
 */
export function createEndpoint(deps: WebhooksDeps): ServiceImpl<typeof WebhooksService>["createEndpoint"] {
  return async (req) => {
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
    if ((await deps.endpoints.count(req.productId)) > MAX_ENDPOINTS_PER_PRODUCT) {
      await deps.endpoints.delete(req.productId, id);
      // A limit of the product, as a plan's 50 (422): nothing here exists already (409 is for that).
      throw rpcError.invalidFields([{ path: "", message: `a product can have at most ${MAX_ENDPOINTS_PER_PRODUCT} webhook endpoints; delete one to add another` }]);
    }
    deps.logger.info({ productId: req.productId, endpointId: id }, "webhook endpoint created");
    return { endpoint: toEndpoint(doc), secret };
  };
}
