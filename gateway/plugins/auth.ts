import fp from "fastify-plugin";
import { LRUCache } from "lru-cache";
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { HttpError } from "../errors.ts";
import { rpcOptions } from "../rpc-options.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** Route needs no bearer key. */
    public?: boolean;
  }
  interface FastifyRequest {
    /** The product the bearer key belongs to; set on every authenticated route. */
    productId: string;
  }
}

export interface AuthOptions {
  /** How long a verified key is trusted without asking the tenancy service again. */
  cacheTtlMs: number;
  /** How long a refused key is refused without asking again (0: ask every time). */
  negativeCacheTtlMs: number;
}

function bearerKey(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (!header) throw new HttpError(401, "missing Authorization header; send 'Authorization: Bearer <API key>'");
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw new HttpError(401, "malformed Authorization header; expected 'Bearer <API key>'");
  return match[1]!;
}

/** Authenticates the bearer key through the tenancy service, with a short cache. */
export const authPlugin = fp<AuthOptions>(async (app: FastifyInstance, opts) => {
  const cache = new LRUCache<string, string>({ max: 10_000, ttl: opts.cacheTtlMs });
  // A flood of one bad key reaches the tenancy service once per TTL, not once per request.
  const refused = opts.negativeCacheTtlMs > 0 ? new LRUCache<string, true>({ max: 10_000, ttl: opts.negativeCacheTtlMs }) : undefined;
  app.decorateRequest("productId", "");
  app.addHook("onRequest", async (request) => {
    // Unmatched routes answer 404 whatever the key; public routes need none.
    if (!request.routeOptions.url || request.routeOptions.config.public) return;
    const key = bearerKey(request);
    const cached = cache.get(key);
    if (cached) {
      request.productId = cached;
      return;
    }
    if (refused?.has(key)) throw new HttpError(401, "invalid API key");
    try {
      const res = await app.services.tenancy.authenticate({ apiKey: key }, rpcOptions(request));
      cache.set(key, res.productId);
      request.productId = res.productId;
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.Unauthenticated) {
        refused?.set(key, true);
        throw new HttpError(401, "invalid API key");
      }
      throw err;
    }
  });
});
