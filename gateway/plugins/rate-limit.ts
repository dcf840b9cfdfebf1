import type { FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import rateLimit from "@fastify/rate-limit";
import { PORTAL_MAX_DEFAULT } from "../config.ts";
import { HttpError } from "../errors.ts";

export interface RateLimitOptions {
  windowMs: number;
  /** Per client address, on routes without a key. */
  publicMax: number;
  /** Per API key (its product), on authenticated routes. */
  keyMax: number;
  /** Products created (POST /products) per client address, on a budget of their own; default publicMax. */
  productCreateMax?: number;
  /** Per portal token, on portal routes (an end user's browser); default PORTAL_MAX_DEFAULT. */
  portalMax?: number;
}

/** Creating a product needs no key: it is limited apart, and tighter than other keyless routes. */
const isProductCreation = (request: FastifyRequest) => request.method === "POST" && request.routeOptions.url === "/api/v1/products";

/**
 * Limits every route: authenticated ones per key (portal routes per portal token), the others (/health, docs) per client
 * address, and product creation (POST /products) per client address on a budget of its own. Its check runs as a route hook, after the authentication hook, so the
 * key's product is known; routes that opt out say `config: { rateLimit: false }`.
 * Counters live in this process: with N gateway replicas a client gets up to N times the
 * limit, which bounds abuse without a shared store on the request path.
 */
export const rateLimitPlugin = fp<RateLimitOptions>(async (app, opts) => {
  await app.register(rateLimit, {
    timeWindow: opts.windowMs,
    keyGenerator: (request) =>
      isProductCreation(request)
        ? `create:${request.ip}`
        : request.portal
          ? request.portal.digest
          : request.productId
            ? `key:${request.productId}`
            : `ip:${request.ip}`,
    max: (_request, key) =>
      key.startsWith("key:")
        ? opts.keyMax
        : key.startsWith("portal:")
          ? (opts.portalMax ?? PORTAL_MAX_DEFAULT)
          : key.startsWith("create:")
            ? (opts.productCreateMax ?? opts.publicMax)
            : opts.publicMax,
    cache: 50_000,
    errorResponseBuilder: (_request, ctx) =>
      new HttpError(429, `rate limit of ${ctx.max} requests per ${Math.round(opts.windowMs / 1000)} s exceeded; retry in ${ctx.after}`),
  });
});
