import type { ServiceImpl } from "@connectrpc/connect";
import type { TenancyService } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { toProduct } from "./mapping.ts";
import type { TenancyDeps } from "../deps.ts";

/** A key belongs to exactly one product, so the list holds that product alone. */
export function listProducts(deps: TenancyDeps): ServiceImpl<typeof TenancyService>["listProducts"] {
  return async (req) => {
    const product = req.productId ? await deps.products.get(req.productId) : null;
    return { products: product ? [toProduct(product)] : [] };
  };
}
