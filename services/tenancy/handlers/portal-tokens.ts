import { randomBytes } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import type { TenancyService } from "@meter/proto/meter/tenancy/v1/tenancy_pb";
import { rpcError } from "@meter/lib/errors";
import { PORTAL_TOKEN_PREFIX, PORTAL_TTL, hashPortalToken, looksLikePortalToken } from "@meter/lib/portal-tokens";
import { toTimestamp } from "@meter/lib/time";
import type { TenancyDeps } from "../deps.ts";

type Impl = ServiceImpl<typeof TenancyService>;

const INVALID = "invalid portal token";

/** Expired tokens are swept at most this often per process, by the mints that follow. */
export const SWEEP_INTERVAL_MS = 60_000;

/**
 * A product mints a token per page view, so tokens pile up: every SWEEP_INTERVAL_MS a mint
 * also deletes the expired ones (in the background; an expired token is refused anyway).
 */
export function createPortalToken(deps: TenancyDeps): Impl["createPortalToken"] {
  let lastSweep = 0;
  const sweep = (now: Date) => {
    if (now.getTime() - lastSweep < SWEEP_INTERVAL_MS) return;
    lastSweep = now.getTime();
    deps.portalTokens.deleteExpired(now).catch((err) => deps.logger.warn({ err }, "could not delete expired portal tokens"));
  };
  return async (req) => {
    const ttl = req.ttlSeconds === 0 ? PORTAL_TTL.default : req.ttlSeconds;
    if (ttl < PORTAL_TTL.min || ttl > PORTAL_TTL.max) {
      throw rpcError.invalid(`ttl_seconds must be ${PORTAL_TTL.min}-${PORTAL_TTL.max}`);
    }
    if (req.userId.length === 0) throw rpcError.invalid("user_id must not be empty");
    const now = new Date();
    const token = PORTAL_TOKEN_PREFIX + randomBytes(32).toString("base64url");
    const expiresAt = new Date(now.getTime() + ttl * 1000);
    await deps.portalTokens.insert({ _id: hashPortalToken(token), product_id: req.productId, user_id: req.userId, created_at: now, expires_at: expiresAt });
    sweep(now);
    return { token, expiresAt: toTimestamp(expiresAt) };
  };
}

export function authenticatePortalToken(deps: TenancyDeps): Impl["authenticatePortalToken"] {
  return async (req) => {
    if (!looksLikePortalToken(req.token)) throw rpcError.unauthenticated(INVALID);
    const doc = await deps.portalTokens.byHash(hashPortalToken(req.token));
    if (!doc) throw rpcError.unauthenticated(INVALID);
    if (doc.expires_at <= new Date()) {
      throw rpcError.unauthenticated(`portal token expired at ${doc.expires_at.toISOString()}; ask the product for a new one`);
    }
    return { productId: doc.product_id, userId: doc.user_id, expiresAt: toTimestamp(doc.expires_at) };
  };
}

export function revokePortalTokens(deps: TenancyDeps): Impl["revokePortalTokens"] {
  return async (req) => {
    const revoked = await deps.portalTokens.deleteUser(req.productId, req.userId);
    deps.logger.info({ productId: req.productId, revoked }, "portal tokens revoked");
    return { revoked };
  };
}
