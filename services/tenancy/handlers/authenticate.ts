import type { ServiceImpl } from "@connectrpc/connect";
import type { TenancyService } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { rpcError } from "@meter/lib/errors";
import { hashApiKey, looksLikeApiKey } from "../keys.ts";
import type { TenancyDeps } from "../deps.ts";

export function authenticate(deps: TenancyDeps): ServiceImpl<typeof TenancyService>["authenticate"] {
  return async (req) => {
    if (!looksLikeApiKey(req.apiKey)) throw rpcError.unauthenticated("invalid API key");
    const productId = await deps.keys.productIdForHash(hashApiKey(req.apiKey));
    if (!productId) throw rpcError.unauthenticated("invalid API key");
    return { productId };
  };
}
