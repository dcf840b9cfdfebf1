import { characters } from "@meter/lib/characters";
import type { ServiceImpl } from "@connectrpc/connect";
import type { CreateApiKeyRequest, TenancyService } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { rpcError } from "@meter/lib/errors";
import { fromTimestamp } from "@meter/lib/time";
import { busy, newKeyDoc } from "./common.ts";
import { toApiKey } from "./mapping.ts";
import type { KeyScope } from "../store/api-keys.ts";
import type { TenancyDeps } from "../deps.ts";

/** Longest key name. */
export const KEY_NAME_MAX = 100;
/** Keys a product may hold at once (revoked ones do not count). */
export const KEYS_PER_PRODUCT_MAX = 50;
const SCOPES: readonly string[] = ["admin", "ingest"] satisfies KeyScope[];

function validate(req: CreateApiKeyRequest, now: Date): { name: string; scope: KeyScope; expiresAt: Date | null } {
  if (req.name.trim().length === 0) throw rpcError.invalid("name must not be empty");
  if (characters(req.name) > KEY_NAME_MAX) throw rpcError.invalid(`name must be at most ${KEY_NAME_MAX} characters`);
  const scope = req.scope || "admin";
  if (!SCOPES.includes(scope)) throw rpcError.invalid(`scope must be one of ${SCOPES.join(", ")}`);
  const expiresAt = fromTimestamp(req.expiresAt) ?? null;
  if (expiresAt && expiresAt.getTime() <= now.getTime()) throw rpcError.invalid("expires_at must be in the future");
  return { name: req.name, scope: scope as KeyScope, expiresAt };
}

export function createApiKey(deps: TenancyDeps): ServiceImpl<typeof TenancyService>["createApiKey"] {
  return async (req) => {
    const now = new Date();
    const input = validate(req, now);
    if (!(await deps.products.get(req.productId))) throw rpcError.notFound("product not found");
    // Under the lock so that concurrent creations cannot pass the bound together.
    const created = await deps.products.withKeysLock(req.productId, async () => {
      if ((await deps.keys.count(req.productId)) >= KEYS_PER_PRODUCT_MAX) {
        throw rpcError.precondition(`a product holds at most ${KEYS_PER_PRODUCT_MAX} keys; revoke one first`);
      }
      const { apiKey, doc } = newKeyDoc(req.productId, input, now);
      await deps.keys.insert(doc);
      return { apiKey, doc };
    });
    if (!created) throw busy();
    deps.logger.info({ productId: req.productId, keyId: created.value.doc.key_id, scope: input.scope }, "API key created");
    return { key: toApiKey(created.value.doc), apiKey: created.value.apiKey };
  };
}
