import { Type, peerUrlFields, productConcurrencyFields } from "@meter/lib/config";

/** Protection settings every process hosting the gateway reads (gateway process, all-in-one). */
export function protectionFields(defaults: { publicMax: number; keyMax: number }) {
  return {
    /** Length of the rate-limit window. */
    RATE_LIMIT_WINDOW_MS: Type.Integer({ default: 60_000, minimum: 1_000 }),
    /** Requests per window and client address on routes without a key (POST /products, /health, docs). */
    RATE_LIMIT_PUBLIC_MAX: Type.Integer({ default: defaults.publicMax, minimum: 1 }),
    /** Requests per window and API key on authenticated routes. */
    RATE_LIMIT_KEY_MAX: Type.Integer({ default: defaults.keyMax, minimum: 1 }),
    /** How long an API key the tenancy service refused is refused without asking again. */
    AUTH_NEGATIVE_CACHE_TTL_MS: Type.Integer({ default: 5_000, minimum: 0 }),
    /**
     * Which proxies in front of the gateway are trusted for the client address (X-Forwarded-For):
     * "" none, "true" all, a hop count, or comma-separated addresses/CIDRs.
     */
    TRUST_PROXY: Type.String({ default: "", pattern: "^[0-9A-Za-z.:/, ]*$" }),
  };
}

export const gatewayConfigSchema = Type.Object({
  PORT: Type.Integer({ default: 8080, minimum: 0, maximum: 65535 }),
  HOST: Type.String({ default: "0.0.0.0" }),
  LOG_LEVEL: Type.String({ default: "info" }),
  ...peerUrlFields,
  AUTH_CACHE_TTL_MS: Type.Integer({ default: 30_000, minimum: 0 }),
  ...protectionFields({ publicMax: 120, keyMax: 6_000 }),
  ...productConcurrencyFields,
});

export interface Protection {
  rateLimit: { windowMs: number; publicMax: number; keyMax: number };
  negativeCacheTtlMs: number;
  trustProxy: boolean | number | string[];
}

/** Defaults of processes meant for one machine (all-in-one, tests): limits nobody hits by hand. */
export const LOCAL_PROTECTION: Protection = {
  rateLimit: { windowMs: 60_000, publicMax: 100_000, keyMax: 1_000_000 },
  negativeCacheTtlMs: 5_000,
  trustProxy: false,
};

export function protectionSettings(config: {
  RATE_LIMIT_WINDOW_MS: number;
  RATE_LIMIT_PUBLIC_MAX: number;
  RATE_LIMIT_KEY_MAX: number;
  AUTH_NEGATIVE_CACHE_TTL_MS: number;
  TRUST_PROXY: string;
}): Protection {
  const t = config.TRUST_PROXY.trim();
  return {
    rateLimit: { windowMs: config.RATE_LIMIT_WINDOW_MS, publicMax: config.RATE_LIMIT_PUBLIC_MAX, keyMax: config.RATE_LIMIT_KEY_MAX },
    negativeCacheTtlMs: config.AUTH_NEGATIVE_CACHE_TTL_MS,
    trustProxy: t === "" || t === "false" ? false : t === "true" ? true : /^\d+$/.test(t) ? Number(t) : t.split(",").map((s) => s.trim()).filter(Boolean),
  };
}
