import { randomBytes } from "node:crypto";
import { link, mkdir, open, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { Type, idlePollFields, serviceConfigSchema } from "@meter/lib/config";
import { DEVELOPMENT_SECRET_KEY, parsePreviousKeys, parseSecretKey } from "./domain/secrets.ts";

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

/**
 * "true" lets a process run without WEBHOOKS_SECRET_KEY, on the public development key (npm run
 * start:split sets it; local use only).
 */
export const allowDevelopmentKeyField = { WEBHOOKS_ALLOW_DEVELOPMENT_KEY: Type.Boolean({ default: false }) };

export const webhooksConfigSchema = serviceConfigSchema({ port: 9095, db: "meter_webhooks" }, {
  ...webhooksSettingsFields,
  ...allowDevelopmentKeyField,
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

/** Where a single-machine install (npm start on its embedded database) keeps its webhooks key: under DATA_DIR. */
export const LOCAL_KEY_FILE = "webhooks-secret.key";

/**
 * The webhooks settings of `npm start`. Until it made keys of its own it sealed secrets with the
 * public development key, so that key stays among the previous ones: secrets sealed with it
 * open, and the pass at start seals them again with the current key. Without
 * WEBHOOKS_SECRET_KEY, on its embedded database (`dataDir`), the current key is one of its own,
 * made at the first start and kept in `dataDir` (readable by its owner only); `made` is told
 * the file's path when that happens.
 */
export async function allInOneWebhooksSettings<S extends ReturnType<typeof webhooksSettings>>(settings: S, dataDir: string | undefined, made: (file: string) => void): Promise<S> {
  const secretKey = settings.secretKey ?? (dataDir === undefined ? undefined : await localSecretKey(dataDir, made));
  if (!secretKey || secretKey.equals(DEVELOPMENT_SECRET_KEY)) return settings;
  return { ...settings, secretKey, previousSecretKeys: [...settings.previousSecretKeys, DEVELOPMENT_SECRET_KEY] };
}

/**
 * The key in `dataDir`, made when absent: written to a file of its own, flushed, then linked to
 * its name, so that a crash leaves either no key file or a whole one, and of two starts at once
 * both read the one that was linked first.
 */
async function localSecretKey(dataDir: string, made: (file: string) => void): Promise<Buffer> {
  const file = path.join(dataDir, LOCAL_KEY_FILE);
  await mkdir(dataDir, { recursive: true });
  const draft = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
  try {
    const handle = await open(draft, "wx", 0o600);
    try {
      await handle.writeFile(`${randomBytes(32).toString("hex")}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await link(draft, file);
    made(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  } finally {
    await rm(draft, { force: true });
  }
  try {
    return parseSecretKey((await readFile(file, "utf8")).trim());
  } catch (err) {
    throw new Error(`${file} does not hold a webhooks key (${(err as Error).message}); restore it from a backup, or set WEBHOOKS_SECRET_KEY to the key that sealed the signing secrets`);
  }
}
