import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@meter/lib/errors";
import { generateApiKey, hashApiKey } from "../domain/keys.ts";
import type { ApiKeyDoc, KeyScope } from "../store/api-keys.ts";

/** Characters of a key shown in lists: the prefix and 7 of its random characters. */
const DISPLAY_PREFIX_LENGTH = 10;

export const busy = () => new ConnectError("the product's keys are being changed by another request; retry", Code.Aborted);

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
