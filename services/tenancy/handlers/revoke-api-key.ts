import type { ServiceImpl } from "@connectrpc/connect";
import type { TenancyService } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { Code, ConnectError, rpcError } from "@meter/lib/errors";
import { busy } from "./common.ts";
import type { ApiKeyDoc } from "../store/api-keys.ts";
import type { TenancyDeps } from "../deps.ts";

/** An admin key that still works at `now`. */
const usableAdmin = (k: ApiKeyDoc, now: Date) => k.scope === "admin" && (!k.expires_at || k.expires_at > now);

export function revokeApiKey(deps: TenancyDeps): ServiceImpl<typeof TenancyService>["revokeApiKey"] {
  return async (req) => {
    const notFound = () => rpcError.notFound(`API key ${req.keyId} not found`);
    if (!(await deps.keys.list(req.productId)).some((k) => k.key_id === req.keyId)) throw notFound();
    const done = await deps.products.withKeysLock(req.productId, async () => {
      const now = new Date();
      const keys = await deps.keys.list(req.productId);
      const key = keys.find((k) => k.key_id === req.keyId);
      if (!key) throw notFound();
      if (usableAdmin(key, now) && !keys.some((k) => k.key_id !== key.key_id && usableAdmin(k, now))) {
        throw new ConnectError("this is the product's last admin key; create another admin key before revoking it", Code.Aborted);
      }
      if (!(await deps.keys.delete(req.productId, req.keyId))) throw notFound();
    });
    if (!done) throw busy();
    deps.logger.info({ productId: req.productId, keyId: req.keyId }, "API key revoked");
    return {};
  };
}
