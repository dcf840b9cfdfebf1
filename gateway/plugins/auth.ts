import fp from "fastify-plugin";
import { LRUCache } from "lru-cache";
import { Code, ConnectError } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { hashApiKey, looksLikeApiKey } from "@meter/lib/api-keys";
import { HttpError } from "../errors.ts";
import { rpcOptions } from "../rpc-options.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** Route needs no bearer key. */
    public?: boolean;
    /** An `ingest` key may call the route (every other route needs an `admin` key). */
    ingest?: boolean;
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
  /** Refused authentications per window and client address; past it, 429 before any check. */
  failureMax: number;
  windowMs: number;
}

interface Verified {
  productId: string;
  scope: string;
}

const INVALID = "invalid API key";

function bearerKey(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (!header) throw new HttpError(401, "missing Authorization header; send 'Authorization: Bearer <API key>'");
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw new HttpError(401, "malformed Authorization header; expected 'Bearer <API key>'");
  return match[1]!;
}

/**
 * Refused authentications per client address in fixed windows. Counting only refusals, it
 * never slows a product that holds a valid key, and it bounds how often one address can make
 * the gateway ask tenancy about keys that do not exist.
 */
class FailureWindows {
  private readonly windows = new LRUCache<string, { count: number; resetAt: number }>({ max: 100_000 });

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
  ) {}

  /** Seconds until the address may try again, when it is past the limit. */
  blockedFor(address: string, now: number): number | undefined {
    const w = this.windows.get(address);
    if (!w || w.resetAt <= now || w.count < this.max) return undefined;
    return Math.max(1, Math.ceil((w.resetAt - now) / 1000));
  }

  record(address: string, now: number): void {
    const w = this.windows.get(address);
    if (!w || w.resetAt <= now) this.windows.set(address, { count: 1, resetAt: now + this.windowMs });
    else w.count++;
  }
}

/**
 * Authenticates the bearer key through the tenancy service. A token that cannot be a key
 * (wrong shape or length) is refused before any lookup or cache; the caches hold digests
 * of keys, never keys. A verified key is trusted for a few seconds only (the configuration
 * allows at most 4 s), so a revoked key is refused by every replica within 5 s.
 */
export const authPlugin = fp<AuthOptions>(async (app: FastifyInstance, opts) => {
  const verified = opts.cacheTtlMs > 0 ? new LRUCache<string, Verified>({ max: 10_000, ttl: opts.cacheTtlMs }) : undefined;
  // Concurrent requests of one key whose cache entry lapsed share one tenancy call.
  const inFlight = new Map<string, Promise<Verified>>();
  // A flood of one bad key reaches the tenancy service once per TTL, not once per request.
  const refused =
    opts.negativeCacheTtlMs > 0 ? new LRUCache<string, string>({ max: 10_000, ttl: opts.negativeCacheTtlMs }) : undefined;
  const failures = new FailureWindows(opts.failureMax, opts.windowMs);

  async function verify(request: FastifyRequest, key: string, digest: string): Promise<Verified> {
    try {
      const res = await app.services.tenancy.authenticate({ apiKey: key }, rpcOptions(request));
      const v = { productId: res.productId, scope: res.scope || "admin" };
      // Never trusted past its expiry.
      const left = res.expiresAt ? timestampDate(res.expiresAt).getTime() - Date.now() : Number.POSITIVE_INFINITY;
      if (left > 0) verified?.set(digest, v, { ttl: Math.min(opts.cacheTtlMs, left) });
      return v;
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.Unauthenticated) {
        const detail = err.rawMessage || INVALID;
        refused?.set(digest, detail);
        throw new HttpError(401, detail);
      }
      throw err;
    }
  }

  /** `blocked`: the address is past its refusals; only a key verified moments ago still passes. */
  async function resolve(request: FastifyRequest, reply: FastifyReply, blocked: number | undefined): Promise<Verified> {
    const key = bearerKey(request);
    if (!looksLikeApiKey(key)) throw new HttpError(401, INVALID);
    const digest = hashApiKey(key);
    const cached = verified?.get(digest);
    if (cached) return cached;
    if (blocked !== undefined) refuse(reply, blocked);
    const detail = refused?.get(digest);
    if (detail) throw new HttpError(401, detail);
    let pending = inFlight.get(digest);
    if (!pending) {
      pending = verify(request, key, digest).finally(() => inFlight.delete(digest));
      inFlight.set(digest, pending);
    }
    return pending;
  }

  function refuse(reply: FastifyReply, retryAfter: number): never {
    reply.header("retry-after", String(retryAfter));
    throw new HttpError(429, `too many requests with a missing or invalid API key from this address; retry in ${retryAfter} s`);
  }

  app.decorateRequest("productId", "");
  app.addHook("onRequest", async (request, reply) => {
    // Unmatched routes answer 404 whatever the key; public routes need none.
    if (!request.routeOptions.url || request.routeOptions.config.public) return;
    const now = Date.now();
    const blocked = failures.blockedFor(request.ip, now);
    let v: Verified;
    try {
      v = await resolve(request, reply, blocked);
    } catch (err) {
      if (err instanceof HttpError && err.statusCode === 401) {
        if (blocked !== undefined) refuse(reply, blocked);
        failures.record(request.ip, now);
      }
      throw err;
    }
    if (v.scope !== "admin" && !request.routeOptions.config.ingest) {
      throw new HttpError(403, `this route needs an admin key; the key's scope is "${v.scope}"`);
    }
    request.productId = v.productId;
  });
});
