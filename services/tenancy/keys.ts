import { createHash, randomBytes } from "node:crypto";

/** Recognisable prefix so leaked keys can be found by secret scanners. */
export const API_KEY_PREFIX = "mk_";
const KEY_BYTES = 32; // 256 bits of entropy

export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(KEY_BYTES).toString("base64url");
}

/**
 * Keys carry 256 random bits, so a single SHA-256 is enough: there is nothing to brute-force,
 * and lookup by hash stays an indexed equality match.
 */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** Cheap shape check before touching the database. */
export function looksLikeApiKey(key: string): boolean {
  return key.startsWith(API_KEY_PREFIX) && /^[A-Za-z0-9_-]{40,64}$/.test(key.slice(API_KEY_PREFIX.length));
}

export function slugify(name: string): string {
  const slug = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 60)
    .replace(/-+$/g, "");
  return slug || "product";
}
