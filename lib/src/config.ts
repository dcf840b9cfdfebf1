import { envSchema } from "env-schema";
import { Type, type Static, type TObject, type TProperties } from "typebox";
import { createLogger } from "./logger.ts";
import { ANY_ADDRESS } from "./listen-address.ts";

export { Type };

/**
 * Reads and validates environment variables against a TypeBox schema, applying defaults.
 * Every problem is reported at once, at start-up, rather than one at a time at first use.
 */
export function loadConfig<P extends TProperties>(
  schema: TObject<P>,
  env: Record<string, string | undefined> = process.env,
): Static<TObject<P>> {
  try {
    return envSchema<Static<TObject<P>>>({
      schema,
      data: env,
      dotenv: false,
      ajv: {
        customOptions(ajv) {
          return ajv;
        },
      },
    });
  } catch (err) {
    throw new Error(`invalid configuration: ${(err as Error).message}`);
  }
}

/**
 * loadConfig for a process's entry point: an invalid environment ends the process with code 1
 * after one structured log line that says every problem (a thrown error printed a stack, not a
 * line a log pipeline reads).
 */
export function loadConfigOrExit<P extends TProperties>(schema: TObject<P>, name: string): Static<TObject<P>> {
  try {
    return loadConfig(schema);
  } catch (err) {
    createLogger(name, "info").fatal((err as Error).message);
    process.exit(1);
  }
}

/**
 * Where a process serves /metrics: 0 (the default) on its main port; any other port there
 * alone, and not on the main port, so that what reaches the main port (the public gateway,
 * the services' gRPC callers) and what scrapes metrics can be told apart by port.
 */
export const metricsPortField = {
  METRICS_PORT: Type.Integer({ default: 0, minimum: 0, maximum: 65535 }),
};

/** pino's levels: another name passes no check of pino's own until the logger is made, and crashes the process there. */
export const logLevelField = Type.Union(
  ["fatal", "error", "warn", "info", "debug", "trace", "silent"].map((l) => Type.Literal(l)),
  { default: "info" },
);

/** The listening address of a service or gateway process: every address, IPv6 and IPv4 (listen-address.ts). */
export const hostField = Type.String({ default: ANY_ADDRESS });

/** Fields shared by every service process. */
export const serviceConfigFields = {
  MONGODB_URL: Type.String({ default: "mongodb://127.0.0.1:27017/" }),
  LOG_LEVEL: logLevelField,
  HOST: hostField,
  ...metricsPortField,
};

/**
 * What every service process reads: the shared fields, and the port it listens on and the
 * database it keeps (with the defaults of this service).
 */
export function serviceProcessFields(defaults: { port: number; db: string }) {
  return {
    ...serviceConfigFields,
    PORT: Type.Integer({ default: defaults.port, minimum: 0, maximum: 65535 }),
    MONGODB_DB: Type.String({ default: defaults.db, minLength: 1 }),
  };
}

/** A service process's schema: what every one reads, its peers' URLs, and `settings` of its own. */
export function serviceConfigSchema<P extends TProperties>(defaults: { port: number; db: string }, settings: P) {
  return Type.Object({ ...serviceProcessFields(defaults), ...peerUrlFields, ...settings });
}

/**
 * Ingestion batches of one product handled at once by one process: admitted by the gateway
 * before their bodies are read, written by the ingestion service (lib/src/keyed-gate.ts); 0: no limit.
 */
export const productConcurrencyFields = {
  INGESTION_PRODUCT_CONCURRENCY: Type.Integer({ default: 4, minimum: 0, maximum: 1_000 }),
  /**
   * While another product is being served, the share of recent time one product's batches may
   * take before its next waits (lib/src/fair-share.ts); 0: no such wait. Gateway only.
   */
  INGESTION_PRODUCT_SHARE: Type.Number({ default: 0.5, minimum: 0, maximum: 64 }),
  /** How far back "recent" and "being served" reach for INGESTION_PRODUCT_SHARE. */
  INGESTION_SHARE_WINDOW_MS: Type.Integer({ default: 1_000, minimum: 10, maximum: 3_600_000 }),
  /**
   * Bytes of batch bodies (as their Content-Length says) a gateway process reads and holds at
   * once, all products together: a parsed batch takes about twice its body in memory, so the
   * bound keeps a process within its memory whatever many products send at once; 0: no bound.
   * Gateway only.
   */
  GATEWAY_BATCH_BYTES_IN_FLIGHT: Type.Integer({ default: 96 * 1024 * 1024, minimum: 0 }),
};

/**
 * How long a service's background work rests at most while it finds nothing to do: the pause
 * between two polls of its roll-up or relay job grows up to this, and its job scheduler scans
 * for jobs that other replicas scheduled this often (lib/src/jobs.ts; docs/operations.md).
 */
export const idlePollFields = {
  IDLE_POLL_MAX_MS: Type.Integer({ default: 30_000, minimum: 100, maximum: 600_000 }),
};

/** Where each service listens in split mode; every service reaches its peers through these. */
// A base URL (scheme and host[:port], no path): "tenancy:9091" is refused at start-up, not met as
// a 503 on every call after a rollout has replaced every good pod.
const peerUrl = (fallback: string) => Type.String({ default: fallback, pattern: "^https?://[^/\\s]+/?$" });
export const peerUrlFields = {
  TENANCY_URL: peerUrl("http://127.0.0.1:9091"),
  PLANS_URL: peerUrl("http://127.0.0.1:9092"),
  INGESTION_URL: peerUrl("http://127.0.0.1:9093"),
  ANALYTICS_URL: peerUrl("http://127.0.0.1:9094"),
  WEBHOOKS_URL: peerUrl("http://127.0.0.1:9095"),
};

export type PeerUrls = Record<"tenancy" | "plans" | "ingestion" | "analytics" | "webhooks", string>;

export function peerUrls(config: Record<keyof typeof peerUrlFields, string>): PeerUrls {
  return {
    tenancy: config.TENANCY_URL,
    plans: config.PLANS_URL,
    ingestion: config.INGESTION_URL,
    analytics: config.ANALYTICS_URL,
    webhooks: config.WEBHOOKS_URL,
  };
}
