import type { ServiceImpl } from "@connectrpc/connect";
import type { TenancyService } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { toApiKey } from "./mapping.ts";
import type { TenancyDeps } from "../deps.ts";

export function listApiKeys(deps: TenancyDeps): ServiceImpl<typeof TenancyService>["listApiKeys"] {
  return async (req) => {
    return { keys: (await deps.keys.list(req.productId)).map(toApiKey) };
  };
}
