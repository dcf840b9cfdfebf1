import fp from "fastify-plugin";
import { LRUCache } from "lru-cache";
import { Code, ConnectError } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { hashApiKey, looksLikeApiKey } from "@meter/lib/api-keys";
import { hashPortalToken, looksLikePortalToken } from "@meter/lib/portal-tokens";
import { dueForRefresh } from "@meter/lib/refresh-ahead";
import { HttpError } from "../errors.ts";
import { rpcOptions } from "../rpc-options.ts";
import { errors } from "../schemas/common.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** Route needs no bearer key. */
    public?: boolean;
    /** An `ingest` key may call the route (every other route needs an `admin` key). */
    ingest?: boolean;
    /** The route takes a portal token, and nothing else (no API key). */
    portal?: boolean;
  }
  interface FastifyRequest {
    /** The product the bearer key belongs to; set on every authenticated route. */
    productId: string;
    /** On portal routes: the one user the portal token reads, and the token's digest. */
    portal: { userId: string; digest: string } | null;
  }
}

export interface AuthOptions {
  /** How long a verified key is trusted without asking the tenancy service again. */
  cacheTtlMs: number;
  /** The verified keys' cache's clock (ms, monotonic), for tests; performance.now() by default. */
  clock?: () => number;
  /** How long a refused key is refused without asking again (0: ask every time). */
  negativeCacheTtlMs: number;
  /** Refused authentications per window and client address; past it, 429 before any check. */
  failureMax: number;
  windowMs: number;
}

interface Verified {
  productId: string;
  scope: string;
  /** Portal tokens only: the user they read. */
  userId?: string;
}

const INVALID = "invalid API key";
const INVALID_PORTAL = "invalid portal token";
const PORTAL_ELSEWHERE = "a portal token reads GET /portal/me only; every other route needs an API key";

function bearerKey(request: FastifyRequest, what: string): string {
  const header = request.headers.authorization;
  if (!header) throw new HttpError(401, `missing Authorization header; send 'Authorization: Bearer <${what}>'`);
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw new HttpError(401, `malformed Authorization header; expected 'Bearer <${what}>'`);
  return match[1]!;
}

/**
 * What the bearer token must be on this route: an API key, or on portal routes a portal
 * token (each refused on the other's routes). Cache entries of the two never collide:
 * a portal token's digest is prefixed.
 */
function credential(request: FastifyRequest) {
  const portal = request.routeOptions.config.portal === true;
  const token = bearerKey(request, portal ? "portal token" : "API key");
  if (portal) {
    if (!looksLikePortalToken(token)) throw new HttpError(401, INVALID_PORTAL);
    return { token, portal, digest: `portal:${hashPortalToken(token)}` };
  }
  if (!looksLikeApiKey(token)) throw new HttpError(401, looksLikePortalToken(token) ? PORTAL_ELSEWHERE : INVALID);
  return { token, portal, digest: hashApiKey(token) };
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
 * allows at most 4 s), so a revoked key is refused by every replica within 5 s. A key used in
 * the second half of that time is verified again in the background while the cached answer
 * stands, so a key in steady use never makes a request wait for the tenancy service. Portal
 * tokens (routes with `config.portal`) are checked through their own tenancy RPC at every
 * request, never cached: a revoked one is refused at once.
 */
export const authPlugin = fp<AuthOptions>(async (app: FastifyInstance, opts) => {
  const verified =
    opts.cacheTtlMs > 0
      ? new LRUCache<string, Verified>({ max: 10_000, ttl: opts.cacheTtlMs, ...(opts.clock && { perf: { now: opts.clock } }) })
      : undefined;
  // Concurrent requests of one key whose cache entry lapsed share one tenancy call.
  const inFlight = new Map<string, Promise<Verified>>();
  // A flood of one bad key reaches the tenancy service once per TTL, not once per request.
  const refused =
    opts.negativeCacheTtlMs > 0 ? new LRUCache<string, string>({ max: 10_000, ttl: opts.negativeCacheTtlMs }) : undefined;
  const failures = new FailureWindows(opts.failureMax, opts.windowMs);

  async function ask(request: FastifyRequest, c: ReturnType<typeof credential>) {
    if (c.portal) {
      const res = await app.services.tenancy.authenticatePortalToken({ token: c.token }, rpcOptions(request));
      return { v: { productId: res.productId, scope: "portal", userId: res.userId }, expiresAt: res.expiresAt };
    }
    const res = await app.services.tenancy.authenticate({ apiKey: c.token }, rpcOptions(request));
    return { v: { productId: res.productId, scope: res.scope || "admin" }, expiresAt: res.expiresAt };
  }

  async function verify(request: FastifyRequest, c: ReturnType<typeof credential>): Promise<Verified> {
    const digest = c.digest;
    try {
      const { v, expiresAt } = await ask(request, c);
      // Never trusted past its expiry.
      const left = expiresAt ? timestampDate(expiresAt).getTime() - Date.now() : Number.POSITIVE_INFINITY;
      // A portal token is asked about every time: its revocation (a user's logout, a leaked page)
      // is refused at once, not after the cache's seconds; a page view is one request, not a stream.
      if (left > 0 && !c.portal) verified?.set(digest, v, { ttl: Math.min(opts.cacheTtlMs, left) });
      return v;
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.Unauthenticated) {
        const detail = err.rawMessage || (c.portal ? INVALID_PORTAL : INVALID);
        verified?.delete(digest);
        refused?.set(digest, detail);
        throw new HttpError(401, detail);
      }
      throw err;
    }
  }

  /** `blocked`: the address is past its refusals; only a key verified moments ago still passes. */
  async function resolve(request: FastifyRequest, reply: FastifyReply, blocked: number | undefined): Promise<Verified & { digest: string }> {
    const c = credential(request);
    const digest = c.digest;
    const cached = verified?.get(digest);
    if (cached) {
      if (dueForRefresh(verified!, digest) && !inFlight.has(digest)) {
        // Nothing waits on it: a refusal removes the entry for the next request, a failure leaves it to expire.
        verifyOnce(request, c).catch((err) => request.log.debug({ err }, "verifying a cached key again failed"));
      }
      return { ...cached, digest };
    }
    if (blocked !== undefined) refuse(reply, blocked);
    const detail = refused?.get(digest);
    if (detail) throw new HttpError(401, detail);
    return { ...(await verifyOnce(request, c)), digest };
  }

  /** One tenancy call at a time per key: concurrent requests share it. */
  function verifyOnce(request: FastifyRequest, c: ReturnType<typeof credential>): Promise<Verified> {
    let pending = inFlight.get(c.digest);
    if (!pending) {
      pending = verify(request, c).finally(() => inFlight.delete(c.digest));
      inFlight.set(c.digest, pending);
    }
    return pending;
  }

  function refuse(reply: FastifyReply, retryAfter: number): never {
    reply.header("retry-after", String(retryAfter));
    throw new HttpError(429, `too many requests with a missing or invalid API key from this address; retry in ${retryAfter} s`);
  }

  // The OpenAPI document lists 403 wherever the hook below answers it: routes an ingest key may not call.
  app.addHook("onRoute", (route) => {
    const config = (route.config ?? {}) as { public?: boolean; ingest?: boolean; portal?: boolean };
    if (config.public || config.ingest || config.portal || !route.schema) return;
    const response = (route.schema.response ??= {}) as Record<number, unknown>;
    response[403] ??= errors(403)[403];
  });

  app.decorateRequest("productId", "");
  app.decorateRequest("portal", null);
  app.addHook("onRequest", async (request, reply) => {
    // Unmatched routes answer 404 whatever the key; public routes need none.
    if (!request.routeOptions.url || request.routeOptions.config.public) return;
    const now = Date.now();
    const blocked = failures.blockedFor(request.ip, now);
    let v: Verified & { digest: string };
    try {
      v = await resolve(request, reply, blocked);
    } catch (err) {
      if (err instanceof HttpError && err.statusCode === 401) {
        if (blocked !== undefined) refuse(reply, blocked);
        failures.record(request.ip, now);
      }
      throw err;
    }
    if (v.scope === "portal") {
      request.portal = { userId: v.userId!, digest: v.digest };
    } else if (v.scope !== "admin" && !request.routeOptions.config.ingest) {
      throw new HttpError(403, `this route needs an admin key; the key's scope is "${v.scope}"`);
    }
    request.productId = v.productId;
  });
});
