import type { Interceptor } from "@connectrpc/connect";
import { rpcError } from "./errors.ts";

/**
 * RPCs whose request names no single product, each with why. They are few and deliberate: a
 * new RPC is refused until its request carries `product_id` or it is added here.
 * The value names the repeated fields whose items each carry a product (the handler checks
 * each item, with the item's index in the message), or null when no product exists yet.
 */
export const UNSCOPED_RPCS: Readonly<Record<string, readonly string[] | null>> = {
  // The product does not exist yet.
  "meter.tenancy.v1.TenancyService/CreateProduct": null,
  // The key (the portal token) is what finds the product.
  "meter.tenancy.v1.TenancyService/Authenticate": null,
  "meter.tenancy.v1.TenancyService/AuthenticatePortalToken": null,
  // Batches handed over by other services mix products; every item names its own.
  "meter.analytics.v1.AnalyticsService/RecordEvents": ["usage", "gates"],
  "meter.webhooks.v1.WebhooksService/PublishThresholdCrossings": ["crossings"],
  "meter.webhooks.v1.WebhooksService/PublishGateEvents": ["events"],
  "meter.webhooks.v1.WebhooksService/PublishCreditEvents": ["events"],
};

/** Services that belong to no product (probes). */
const UNSCOPED_SERVICES = new Set(["grpc.health.v1.Health"]);

/**
 * The product check of every RPC, in one place: every server installs it (lib/src/rpc.ts), so
 * a handler may take `req.productId` as given and a new RPC cannot forget it. An empty product
 * id is a caller bug, not a lookup miss, hence INVALID_ARGUMENT rather than NOT_FOUND.
 */
export const requireProduct: Interceptor = (next) => async (req) => {
  if (req.stream || UNSCOPED_SERVICES.has(req.service.typeName)) return next(req);
  const rpc = `${req.service.typeName}/${req.method.name}`;
  if (rpc in UNSCOPED_RPCS) return next(req);
  const field = req.method.input.field.productId;
  const productId = field?.name === "product_id" ? (req.message as unknown as Record<string, unknown>).productId : undefined;
  if (typeof productId !== "string" || productId === "") throw rpcError.invalid("product_id is required");
  return next(req);
};
