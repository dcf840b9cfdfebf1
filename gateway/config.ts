import { Type, hostField, logLevelField, peerUrlFields, productConcurrencyFields } from "@meter/lib/config";

/** Requests per window and portal token, unless RATE_LIMIT_PORTAL_MAX says otherwise. */
export const PORTAL_MAX_DEFAULT = 120;

/** Protection settings every process hosting the gateway reads (gateway process, all-in-one). */
export function protectionFields(defaults: { publicMax: number; keyMax: number; authFailureMax?: number; productCreateMax?: number }) {
  return {
    /** Length of the rate-limit window. */
    RATE_LIMIT_WINDOW_MS: Type.Integer({ default: 60_000, minimum: 1_000 }),
    /** Requests per window and client address on routes without a key (/health, docs). */
    RATE_LIMIT_PUBLIC_MAX: Type.Integer({ default: defaults.publicMax, minimum: 1 }),
    /** Requests per window and API key on authenticated routes. */
    RATE_LIMIT_KEY_MAX: Type.Integer({ default: defaults.keyMax, minimum: 1 }),
    /** Products created (POST /products, no key needed) per window and client address. */
    RATE_LIMIT_PRODUCT_CREATE_MAX: Type.Integer({ default: defaults.productCreateMax ?? defaults.publicMax, minimum: 1 }),
    /** Requests per window and portal token on /portal/me (an end user's browser; the widget asks once a minute). */
    RATE_LIMIT_PORTAL_MAX: Type.Integer({ default: PORTAL_MAX_DEFAULT, minimum: 1 }),
    /** Refused authentications (401) per window and client address; past it, 429 before any check. */
    RATE_LIMIT_AUTH_FAILURE_MAX: Type.Integer({ default: defaults.authFailureMax ?? defaults.publicMax, minimum: 1 }),
    /** How long an API key the tenancy service refused is refused without asking again. */
    AUTH_NEGATIVE_CACHE_TTL_MS: Type.Integer({ default: 5_000, minimum: 0 }),
    /**
     * Which proxies in front of the gateway are trusted for the client address (X-Forwarded-For):
     * "" none, "true" all, a hop count, or comma-separated addresses/CIDRs.
     */
    TRUST_PROXY: Type.String({ default: "", pattern: "^[0-9A-Za-z.:/, ]*$" }),
    ...connectionFields,
  };
}

/**
 * Slow or piled-up connections must not take the process's file handles from everyone else
 * (gateway/connection-limits.ts). Defaults in CONNECTION_DEFAULTS.
 */
const connectionFields = {
  /** A request's headers must all arrive within this long of its first byte (Node's headersTimeout). */
  HTTP_HEADERS_TIMEOUT_MS: Type.Integer({ default: 10_000, minimum: 100, maximum: 600_000 }),
  /** Once the gateway reads a body (after admission for batches), all of it must arrive within this long. */
  HTTP_BODY_TIMEOUT_MS: Type.Integer({ default: 30_000, minimum: 100, maximum: 3_600_000 }),
  /**
   * A request must be received whole within this long of its first byte, admission waits
   * included (Node's requestTimeout): the backstop for bodies the gateway never reads.
   */
  HTTP_REQUEST_TIMEOUT_MS: Type.Integer({ default: 300_000, minimum: 100, maximum: 3_600_000 }),
  /** An idle keep-alive connection is closed after this long: longer than the 60 s after which proxies and clients drop theirs, so they close first. */
  HTTP_KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ default: 72_000, minimum: 100, maximum: 600_000 }),
  /** Open connections per client socket address (the proxy's, behind one); 0: no cap. */
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: Type.Integer({ default: 256, minimum: 0 }),
  /** Open connections in all; 0: half the process's open-file limit (10,000 where unknown). */
  HTTP_MAX_CONNECTIONS: Type.Integer({ default: 0, minimum: 0 }),
  /** On shutdown, how long requests in flight may take before their connections are ended. */
  HTTP_SHUTDOWN_GRACE_MS: Type.Integer({ default: 7_000, minimum: 0, maximum: 8_000 }),
};

export interface ConnectionLimits {
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /** 0: no cap. */
  maxPerAddress: number;
  /** 0: half the process's open-file limit. */
  max: number;
  /** On shutdown, how long requests in flight may take before their connections are ended. */
  shutdownGraceMs: number;
}

export const CONNECTION_DEFAULTS: ConnectionLimits = {
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 30_000,
  requestTimeoutMs: 300_000,
  keepAliveTimeoutMs: 72_000,
  maxPerAddress: 256,
  max: 0,
  shutdownGraceMs: 7_000,
};

/**
 * How long a verified API key is trusted without asking the tenancy service. At most 4 s: a
 * revoked key must be refused by every gateway replica within 5 s.
 */
export const AUTH_CACHE_TTL_MS = Type.Integer({ default: 2_000, minimum: 0, maximum: 4_000 });

export const gatewayConfigSchema = Type.Object({
  PORT: Type.Integer({ default: 8080, minimum: 0, maximum: 65535 }),
  HOST: hostField,
  LOG_LEVEL: logLevelField,
  /** The gateway's /metrics, alone on this port; 0: not served (never on the public PORT). */
  METRICS_PORT: Type.Integer({ default: 0, minimum: 0, maximum: 65535 }),
  ...peerUrlFields,
  AUTH_CACHE_TTL_MS,
  ...protectionFields({ publicMax: 120, keyMax: 6_000, authFailureMax: 60, productCreateMax: 10 }),
  ...productConcurrencyFields,
});

export interface Protection {
  /**
   * authFailureMax: refused authentications per window and client address (default publicMax);
   * productCreateMax: products created per window and client address (default publicMax);
   * portalMax: requests per window and portal token (default PORTAL_MAX_DEFAULT).
   */
  rateLimit: { windowMs: number; publicMax: number; keyMax: number; authFailureMax?: number; productCreateMax?: number; portalMax?: number };
  negativeCacheTtlMs: number;
  trustProxy: boolean | number | string[];
  /** Server timeouts and connection caps; CONNECTION_DEFAULTS for what is absent. */
  connections?: Partial<ConnectionLimits>;
}

/** Defaults of processes meant for one machine (all-in-one, tests): limits nobody hits by hand. */
export const LOCAL_PROTECTION: Protection = {
  // Product creation stays bounded even here (a test suite creates a few hundred a minute).
  rateLimit: { windowMs: 60_000, publicMax: 100_000, keyMax: 1_000_000, productCreateMax: 1_000 },
  negativeCacheTtlMs: 5_000,
  trustProxy: false,
};

export function protectionSettings(config: {
  RATE_LIMIT_WINDOW_MS: number;
  RATE_LIMIT_PUBLIC_MAX: number;
  RATE_LIMIT_KEY_MAX: number;
  RATE_LIMIT_AUTH_FAILURE_MAX: number;
  RATE_LIMIT_PRODUCT_CREATE_MAX: number;
  RATE_LIMIT_PORTAL_MAX: number;
  AUTH_NEGATIVE_CACHE_TTL_MS: number;
  TRUST_PROXY: string;
  HTTP_HEADERS_TIMEOUT_MS: number;
  HTTP_BODY_TIMEOUT_MS: number;
  HTTP_REQUEST_TIMEOUT_MS: number;
  HTTP_KEEP_ALIVE_TIMEOUT_MS: number;
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: number;
  HTTP_MAX_CONNECTIONS: number;
  HTTP_SHUTDOWN_GRACE_MS: number;
}): Protection {
  const t = config.TRUST_PROXY.trim();
  // Node refuses a headers timeout past the request timeout; say which variables, at start-up.
  if (config.HTTP_HEADERS_TIMEOUT_MS > config.HTTP_REQUEST_TIMEOUT_MS) {
    throw new Error(
      `invalid configuration: HTTP_HEADERS_TIMEOUT_MS (${config.HTTP_HEADERS_TIMEOUT_MS}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${config.HTTP_REQUEST_TIMEOUT_MS})`,
    );
  }
  return {
    connections: {
      headersTimeoutMs: config.HTTP_HEADERS_TIMEOUT_MS,
      bodyTimeoutMs: config.HTTP_BODY_TIMEOUT_MS,
      requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      maxPerAddress: config.HTTP_MAX_CONNECTIONS_PER_ADDRESS,
      max: config.HTTP_MAX_CONNECTIONS,
      shutdownGraceMs: config.HTTP_SHUTDOWN_GRACE_MS,
    },
    rateLimit: { windowMs: config.RATE_LIMIT_WINDOW_MS, publicMax: config.RATE_LIMIT_PUBLIC_MAX, keyMax: config.RATE_LIMIT_KEY_MAX, authFailureMax: config.RATE_LIMIT_AUTH_FAILURE_MAX, productCreateMax: config.RATE_LIMIT_PRODUCT_CREATE_MAX, portalMax: config.RATE_LIMIT_PORTAL_MAX },
    negativeCacheTtlMs: config.AUTH_NEGATIVE_CACHE_TTL_MS,
    trustProxy: t === "" || t === "false" ? false : t === "true" ? true : /^\d+$/.test(t) ? Number(t) : t.split(",").map((s) => s.trim()).filter(Boolean),
  };
}
