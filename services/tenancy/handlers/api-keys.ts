import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import type { CreateApiKeyRequest, TenancyService } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { Code, ConnectError, rpcError } from "@meter/lib/errors";
import { fromTimestamp } from "@meter/lib/time";
import { generateApiKey, hashApiKey } from "../domain/keys.ts";
import { toApiKey } from "./mapping.ts";
import type { ApiKeyDoc, KeyScope } from "../store/api-keys.ts";
import type { TenancyDeps } from "../deps.ts";

/** Longest key name. */
export const KEY_NAME_MAX = 100;
/** Keys a product may hold at once (revoked ones do not count). */
export const KEYS_PER_PRODUCT_MAX = 50;
/** Characters of a key shown in lists: the prefix and 7 of its random characters. */
const DISPLAY_PREFIX_LENGTH = 10;

const SCOPES: readonly string[] = ["admin", "ingest"] satisfies KeyScope[];

const busy = () => new ConnectError("the product's keys are being changed by another request; retry", Code.Aborted);

/** The key document of a new key (its secret is returned once and never stored). */
export function newKeyDoc(productId: string, input: { name: string; scope: KeyScope; expiresAt: Date | null }, now: Date) {
  const apiKey = generateApiKey();
  const doc: ApiKeyDoc = {
    _id: hashApiKey(apiKey),
    product_id: productId,
    key_id: randomUUID(),
    name: input.name,
    scope: input.scope,
    display_prefix: apiKey.slice(0, DISPLAY_PREFIX_LENGTH),
    created_at: now,
    expires_at: input.expiresAt,
    last_used_at: null,
  };
  return { apiKey, doc };
}

function validate(req: CreateApiKeyRequest, now: Date): { name: string; scope: KeyScope; expiresAt: Date | null } {
  if (req.name.trim().length === 0) throw rpcError.invalid("name must not be empty");
  if (req.name.length > KEY_NAME_MAX) throw rpcError.invalid(`name must be at most ${KEY_NAME_MAX} characters`);
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

export function listApiKeys(deps: TenancyDeps): ServiceImpl<typeof TenancyService>["listApiKeys"] {
  return async (req) => {
      return { keys: (await deps.keys.list(req.productId)).map(toApiKey) };
  };
}

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
