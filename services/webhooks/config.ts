import { Type, idlePollFields, serviceConfigSchema } from "@meter/lib/config";
import { parsePreviousKeys, parseSecretKey } from "./domain/secrets.ts";

/** The webhooks settings every process hosting the service reads (service process, all-in-one). */
export const webhooksSettingsFields = {
  /** 32 bytes (64 hex characters or base64) sealing signing secrets at rest. */
  WEBHOOKS_SECRET_KEY: Type.Optional(Type.String({ minLength: 32 })),
  /**
   * Keys WEBHOOKS_SECRET_KEY replaced, comma-separated, during a rotation: secrets sealed with one
   * still open, and the service re-seals each with WEBHOOKS_SECRET_KEY when it starts.
   */
  WEBHOOKS_SECRET_KEY_PREVIOUS: Type.Optional(Type.String()),
  /** "true" allows http:// and loopback endpoint URLs: local use only. */
  WEBHOOKS_ALLOW_INSECURE_URLS: Type.Boolean({ default: false }),
  /** Days the delivery log and its events are kept (README, "Retention"). */
  WEBHOOKS_LOG_DAYS: Type.Integer({ default: 30, minimum: 1, maximum: 3650 }),
  /** How often the job scheduler scans for jobs other replicas scheduled. */
  ...idlePollFields,
};

export const webhooksConfigSchema = serviceConfigSchema({ port: 9095, db: "meter_webhooks" }, {
  ...webhooksSettingsFields,
  /**
   * "true" lets the process run without WEBHOOKS_SECRET_KEY, on the public development key
   * (npm run start:split sets it; local use only).
   */
  WEBHOOKS_ALLOW_DEVELOPMENT_KEY: Type.Boolean({ default: false }),
});

/**
 * Why a webhooks process must not start with this configuration: a WEBHOOKS_SECRET_KEY that is
 * not 32 bytes; or none, when every signing secret would be sealed with the public development
 * key and anyone who reads the database could forge deliveries.
 */
export function secretKeyProblem(config: { WEBHOOKS_SECRET_KEY?: string; WEBHOOKS_SECRET_KEY_PREVIOUS?: string; WEBHOOKS_ALLOW_DEVELOPMENT_KEY: boolean }): string | undefined {
  if (config.WEBHOOKS_SECRET_KEY) {
    // Checked here, before the database is reached: a wrong key is said as such, whatever else is down.
    try {
      parseSecretKey(config.WEBHOOKS_SECRET_KEY);
      parsePreviousKeys(config.WEBHOOKS_SECRET_KEY_PREVIOUS);
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  }
  if (config.WEBHOOKS_ALLOW_DEVELOPMENT_KEY) return undefined;
  return (
    "WEBHOOKS_SECRET_KEY is unset: it seals the endpoints' signing secrets at rest. Make one with " +
    "`openssl rand -hex 32` (or `node -e \"console.log(crypto.randomBytes(32).toString('hex'))\"`), keep it in a " +
    "secret store and set it on every webhooks process; secrets sealed with one key need that key. " +
    "For local use only, WEBHOOKS_ALLOW_DEVELOPMENT_KEY=true runs on the public development key."
  );
}

export function webhooksSettings(config: { WEBHOOKS_SECRET_KEY?: string; WEBHOOKS_SECRET_KEY_PREVIOUS?: string; WEBHOOKS_ALLOW_INSECURE_URLS: boolean; WEBHOOKS_LOG_DAYS: number; IDLE_POLL_MAX_MS: number }) {
  return {
    logDays: config.WEBHOOKS_LOG_DAYS,
    idlePollMaxMs: config.IDLE_POLL_MAX_MS,
    secretKey: config.WEBHOOKS_SECRET_KEY ? parseSecretKey(config.WEBHOOKS_SECRET_KEY) : undefined,
    previousSecretKeys: parsePreviousKeys(config.WEBHOOKS_SECRET_KEY_PREVIOUS),
    allowInsecureUrls: config.WEBHOOKS_ALLOW_INSECURE_URLS,
  };
}
