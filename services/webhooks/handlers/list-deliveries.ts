import type { ServiceImpl } from "@connectrpc/connect";
import type { WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { rpcError } from "@meter/lib/errors";
import type { WebhooksDeps } from "../deps.ts";
import { toDelivery } from "./mapping.ts";
import { DELIVERY_STATUSES, type DeliveryPageKey, type DeliveryStatus } from "../store/deliveries.ts";
import { endpointOf } from "./common.ts";

export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 200;

/** Cursor: base64url of [created_at ms, delivery id] of the last row served. Opaque to callers. */
export function encodeCursor(k: DeliveryPageKey): string {
  return Buffer.from(JSON.stringify([k.created_at.getTime(), k.id])).toString("base64url");
}

export function decodeCursor(cursor: string): DeliveryPageKey {
  try {
    const [ms, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown[];
    if (typeof ms === "number" && Number.isFinite(ms) && typeof id === "string") return { created_at: new Date(ms), id };
  } catch {
    // fall through
  }
  throw rpcError.invalid("cursor is not valid; pass next_cursor from the previous page unchanged");
}

export function listDeliveries(deps: WebhooksDeps): ServiceImpl<typeof WebhooksService>["listDeliveries"] {
  return async (req) => {
    const limit = req.limit === 0 ? DEFAULT_PAGE : req.limit;
    if (limit < 1 || limit > MAX_PAGE) throw rpcError.invalid(`limit must be between 1 and ${MAX_PAGE}`);
    if (req.status !== undefined && !(DELIVERY_STATUSES as readonly string[]).includes(req.status)) {
      throw rpcError.invalid(`status must be one of ${DELIVERY_STATUSES.join(", ")}`);
    }
    const after = req.cursor ? decodeCursor(req.cursor) : undefined;
    const endpoint = await endpointOf(deps, req.productId, req.endpointId);
    const rows = await deps.deliveries.page(req.productId, endpoint._id, { status: req.status as DeliveryStatus | undefined, after, limit });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      deliveries: page.map(toDelivery),
      nextCursor: rows.length > limit && last ? encodeCursor({ created_at: last.created_at, id: last._id }) : undefined,
    };
  };
}
