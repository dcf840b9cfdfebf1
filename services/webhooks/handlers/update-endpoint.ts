import type { ServiceImpl } from "@connectrpc/connect";
import type { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { rpcError } from "@meter/lib/errors";
import type { WebhooksDeps } from "../deps.ts";
import { toEndpoint } from "./mapping.ts";
import type { EndpointChanges } from "../store/endpoints.ts";
import { checkDescription, checkEvents, checkUrl, endpointOf } from "./common.ts";

const FIELDS = ["url", "subscribed_events", "description", "enabled"] as const;

/** Changes only the fields named in update_mask; a named description left unset clears it. */
export function updateEndpoint(deps: WebhooksDeps): ServiceImpl<typeof WebhooksService>["updateEndpoint"] {
  return async (req) => {
    const current = await endpointOf(deps, req.productId, req.endpointId);
    const paths = req.updateMask?.paths ?? [];
    const unknown = paths.filter((p) => !(FIELDS as readonly string[]).includes(p));
    if (unknown.length > 0) throw rpcError.invalid(`cannot update ${unknown.join(", ")}; updatable: ${FIELDS.join(", ")}`);
    const patch = req.endpoint;
    const changes: EndpointChanges = {};
    for (const path of paths) {
      if (path === "url") {
        if (patch?.url === undefined) throw rpcError.invalid("url cannot be cleared");
        changes.url = await checkUrl(deps, patch.url);
      } else if (path === "subscribed_events") {
        changes.subscribed_events = checkEvents(patch?.subscribedEvents ?? []);
      } else if (path === "description") {
        changes.description = checkDescription(patch?.description);
      } else if (path === "enabled") {
        if (patch?.enabled === undefined) throw rpcError.invalid("enabled must be true or false");
        changes.enabled = patch.enabled;
      }
    }
    const updated = paths.length === 0 ? current : await deps.endpoints.update(req.productId, current._id, changes);
    if (!updated) throw rpcError.notFound(`webhook endpoint ${req.endpointId} not found`);
    return { endpoint: toEndpoint(updated) };
  };
}
