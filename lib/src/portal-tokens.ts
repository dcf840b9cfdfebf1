import { createHash } from "node:crypto";

/** Recognisable prefix, apart from API keys' `mk_`, so the gateway tells the two apart by shape. */
export const PORTAL_TOKEN_PREFIX = "mpt_";

/** Every portal token is the prefix and 256 random bits in base64url (43 characters). */
const PORTAL_TOKEN_SHAPE = /^mpt_[A-Za-z0-9_-]{43}$/;

/** Lifetime bounds of a portal token, in seconds. */
export const PORTAL_TTL = { min: 60, max: 86_400, default: 3_600 } as const;

/** Whether `token` can be a portal token at all; anything else is refused before any lookup. */
export function looksLikePortalToken(token: string): boolean {
  return token.length === PORTAL_TOKEN_PREFIX.length + 43 && PORTAL_TOKEN_SHAPE.test(token);
}

/**
 * Tokens carry 256 random bits, so one SHA-256 is enough (nothing to brute-force) and the
 * lookup is an equality match on `_id`. Only the digest is stored or cached.
 */
export function hashPortalToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}
