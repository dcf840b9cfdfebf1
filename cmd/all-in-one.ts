// `npm start`: the gateway and every service in one process. Without MONGODB_URL it starts
// the embedded MongoDB-compatible database, keeping its files under DATA_DIR.
import "@meter/lib/v8-flags";
import path from "node:path";
import { Type, loadConfigOrExit, logLevelField } from "@meter/lib/config";
import { startEmbeddedDb } from "@meter/lib/embedded-db";
import { createLogger } from "@meter/lib/logger";
import { onShutdown } from "@meter/lib/process";
import { analyticsSettings, analyticsSettingsFields } from "@meter/analytics";
import { ingestionSettings, ingestionSettingsFields } from "@meter/ingestion";
import { plansSettings, plansSettingsFields } from "@meter/plans";
import { allInOneWebhooksSettings, allowDevelopmentKeyField, secretKeyProblem, webhooksSettings, webhooksSettingsFields } from "@meter/webhooks";
import { AUTH_CACHE_TTL_MS, LOCAL_PROTECTION, protectionFields, protectionSettings } from "@meter/gateway/config";
import { startStack } from "./stack.ts";

const config = loadConfigOrExit(
  Type.Object({
    PORT: Type.Integer({ default: 8080, minimum: 0, maximum: 65535 }),
    HOST: Type.String({ default: "127.0.0.1" }),
    RPC_PORT: Type.Integer({ default: 9090, minimum: 0, maximum: 65535 }),
    // Calls between the modules of this process skip the loopback gRPC hop (docs/operations.md, "The two ways to run").
    RPC_IN_PROCESS: Type.Boolean({ default: true }),
    MONGODB_URL: Type.Optional(Type.String({ minLength: 1 })),
    MONGODB_DB_PREFIX: Type.String({ default: "meter", pattern: "^[A-Za-z0-9_-]+$" }),
    DATA_DIR: Type.String({ default: "./data" }),
    LOG_LEVEL: logLevelField,
    AUTH_CACHE_TTL_MS,
    // One machine, one user: limits nobody reaches by hand; set them lower to try them.
    ...protectionFields(LOCAL_PROTECTION.rateLimit),
    ...plansSettingsFields,
    ...ingestionSettingsFields,
    ...analyticsSettingsFields,
    ...webhooksSettingsFields,
    ...allowDevelopmentKeyField,
  }), "meter");
const logger = createLogger("meter", config.LOG_LEVEL);

// On a database of its own (MONGODB_URL) the process asks for a webhooks key as the webhooks
// process does; on the embedded one, without a key, it makes one and keeps it under DATA_DIR.
const keyProblem = config.MONGODB_URL || config.WEBHOOKS_SECRET_KEY ? secretKeyProblem(config) : undefined;
if (keyProblem) {
  logger.fatal(
    `exiting: ${keyProblem} Secrets this process sealed before it asked for a key (with the public development key) still open once one is set, and are sealed again with it.`,
  );
  process.exit(1);
}

// A first start builds the database for minutes: say so rather than sit silent.
const progress = (message: string) => logger.info(message);
// Supervised: a database process that dies is started again on the same address and files;
// if that keeps failing, this process exits non-zero so that whatever runs it can act.
const embedded = config.MONGODB_URL
  ? undefined
  : await startEmbeddedDb(path.resolve(config.DATA_DIR, "db"), {
      progress,
      supervise: { logger, onGiveUp: (reason) => exitUnrecoverable(reason) },
    });
if (embedded) logger.info({ dataDir: path.resolve(config.DATA_DIR), databasePid: embedded.pid }, "embedded database started");

function exitUnrecoverable(reason: Error): never {
  logger.fatal({ reason: reason.message }, `exiting: ${reason.message}`);
  process.exit(1);
}

const stack = await startStack({
  mongoUrl: config.MONGODB_URL ?? embedded!.url,
  dbPrefix: config.MONGODB_DB_PREFIX,
  rpcPort: config.RPC_PORT,
  inProcessRpc: config.RPC_IN_PROCESS,
  httpPort: config.PORT,
  httpHost: config.HOST,
  logger,
  authCacheTtlMs: config.AUTH_CACHE_TTL_MS,
  protection: protectionSettings(config),
  batchConcurrency: config.INGESTION_PRODUCT_CONCURRENCY,
  batchBytesInFlight: config.GATEWAY_BATCH_BYTES_IN_FLIGHT,
  batchShare: { share: config.INGESTION_PRODUCT_SHARE, windowMs: config.INGESTION_SHARE_WINDOW_MS },
  services: {
    plans: plansSettings(config),
    ingestion: ingestionSettings(config),
    analytics: analyticsSettings(config),
    webhooks: await allInOneWebhooksSettings(webhooksSettings(config), embedded && path.resolve(config.DATA_DIR), (file) =>
      logger.info({ file }, "made the key that seals webhook signing secrets; back this file up with the data: the secrets need it"),
    ),
  },
});
logger.info({ api: stack.apiUrl, rpc: stack.rpcUrl, rpcInProcess: config.RPC_IN_PROCESS }, "meterline is serving");

onShutdown(logger, async () => {
  await stack.close();
  await embedded?.stop();
});
