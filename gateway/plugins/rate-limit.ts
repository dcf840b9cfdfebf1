import fp from "fastify-plugin";
import rateLimit from "@fastify/rate-limit";
import { HttpError } from "../errors.ts";

export interface RateLimitOptions {
  windowMs: number;
  /** Per client address, on routes without a key. */
  publicMax: number;
  /** Per API key (its product), on authenticated routes. */
  keyMax: number;
}

/**
 * Limits every route: authenticated ones per key, the others (POST /products, /health, docs)
 * per client address. Its check runs as a route hook, after the authentication hook, so the
 * key's product is known; routes that opt out say `config: { rateLimit: false }`.
 * Counters live in this process: with N gateway replicas a client gets up to N times the
 * limit, which bounds abuse without a shared store on the request path.
 */
export const rateLimitPlugin = fp<RateLimitOptions>(async (app, opts) => {
  await app.register(rateLimit, {
    timeWindow: opts.windowMs,
    keyGenerator: (request) => (request.productId ? `key:${request.productId}` : `ip:${request.ip}`),
    max: (_request, key) => (key.startsWith("key:") ? opts.keyMax : opts.publicMax),
    cache: 50_000,
    errorResponseBuilder: (_request, ctx) =>
      new HttpError(429, `rate limit of ${ctx.max} requests per ${Math.round(opts.windowMs / 1000)} s exceeded; retry in ${ctx.after}`),
  });
});
