import type { ServiceImpl } from "@connectrpc/connect";
import type { TenancyService } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { rpcError } from "@meter/lib/errors";
import { optionalTimestamp } from "@meter/lib/time";
import { hashApiKey, looksLikeApiKey } from "../domain/keys.ts";
import type { TenancyDeps } from "../deps.ts";
import { LAST_USED_STEP_MS } from "../store/api-keys.ts";

export function authenticate(deps: TenancyDeps): ServiceImpl<typeof TenancyService>["authenticate"] {
  return async (req) => {
    if (!looksLikeApiKey(req.apiKey)) throw rpcError.unauthenticated("invalid API key");
    const hash = hashApiKey(req.apiKey);
    const key = await deps.keys.byHash(hash);
    if (!key) throw rpcError.unauthenticated("invalid API key");
    const now = new Date();
    if (key.expires_at && key.expires_at <= now) {
      throw rpcError.unauthenticated(`API key expired at ${key.expires_at.toISOString()}; create a new key`);
    }
    // At most one write per key every LAST_USED_STEP_MS, whatever the traffic; a failed one is
    // only logged: last_used_at is a hint and never worth refusing a valid key.
    if (!key.last_used_at || now.getTime() - key.last_used_at.getTime() > LAST_USED_STEP_MS) {
      await deps.keys.touch(hash, now).catch((err) => deps.logger.warn({ err, keyId: key.key_id }, "could not record the key's last use"));
    }
    return { productId: key.product_id, keyId: key.key_id, scope: key.scope, expiresAt: optionalTimestamp(key.expires_at) };
  };
}
