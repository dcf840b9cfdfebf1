import { createHash } from "node:crypto";

/** Recognisable prefix so leaked keys can be found by secret scanners. */
export const API_KEY_PREFIX = "mk_";

/** Every key is the prefix and 256 random bits in base64url (43 characters, no padding). */
const API_KEY_SHAPE = /^mk_[A-Za-z0-9_-]{43}$/;

/**
 * Whether `key` can be an API key at all. The gateway refuses anything else before any lookup
 * or cache, so a flood of long or odd tokens costs neither memory nor a call to tenancy.
 */
export function looksLikeApiKey(key: string): boolean {
  return key.length === API_KEY_PREFIX.length + 43 && API_KEY_SHAPE.test(key);
}

/**
 * Keys carry 256 random bits, so a single SHA-256 is enough: there is nothing to brute-force,
 * and lookup by hash stays an indexed equality match. The gateway's caches hold it too, never
 * the key itself.
 */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}
