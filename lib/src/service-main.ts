import type { Db } from "mongodb";
import type { Static, TObject, TProperties } from "typebox";
import { loadConfig } from "./config.ts";
import { createLogger, type Logger } from "./logger.ts";
import pRetry from "p-retry";
import { isDatabaseUnreachable } from "./errors.ts";
import { connectMongo } from "./mongo.ts";
import { onShutdown } from "./process.ts";
import { serveMetrics, serveRpc, type ServiceModule } from "./rpc.ts";

interface BaseConfig {
  MONGODB_URL: string;
  MONGODB_DB: string;
  LOG_LEVEL: string;
  HOST: string;
  PORT: number;
  METRICS_PORT: number;
}

/**
 * The body of every service's main.ts in split mode: validated config, one MongoDB
 * connection, the module served over gRPC, background work started, clean shutdown.
 */
export async function serviceMain<P extends TProperties>(spec: {
  name: string;
  configSchema: TObject<P>;
  create(ctx: { db: Db; logger: Logger; config: Static<TObject<P>> }): Promise<ServiceModule>;
}): Promise<void> {
  const config = loadConfig(spec.configSchema) as Static<TObject<P>> & BaseConfig;
  const logger = createLogger(spec.name, config.LOG_LEVEL);
  const { mongo, module } = await untilReachable(logger, async () => {
    const mongo = await connectMongo(config.MONGODB_URL);
    try {
      return { mongo, module: await spec.create({ db: mongo.db(config.MONGODB_DB), logger, config }) };
    } catch (err) {
      await mongo.close().catch(() => {});
      throw err;
    }
  });
  const apart = config.METRICS_PORT !== 0;
  const server = await serveRpc({ modules: [module], port: config.PORT, host: config.HOST, logger, metrics: !apart });
  const metrics = apart ? await serveMetrics({ port: config.METRICS_PORT, host: config.HOST, logger }) : undefined;
  await module.start?.();
  logger.info({ port: server.port }, `${spec.name} service listening`);
  onShutdown(logger, async () => {
    // The port stops taking calls at once and answers those in flight while background work stops.
    await Promise.all([server.close(), module.stop?.()]);
    await metrics?.close();
    await mongo.close();
  });
}

/**
 * Runs `connect` until the database answers: a database not reachable yet (starting beside this
 * pod, an outage) is waited for with a back-off up to 30 s, each failed attempt logged, where a
 * crash would put the pod in Kubernetes' restart back-off (up to 5 minutes, long after the
 * database is back). Any other error (a bad key, a bug) ends the start at once. A SIGTERM or
 * SIGINT meanwhile ends the process (exit 0): no shutdown handler exists yet to hear it.
 */
async function untilReachable<T>(logger: Logger, connect: () => Promise<T>): Promise<T> {
  const onSignal = (signal: NodeJS.Signals) => {
    logger.info({ signal }, "stopped while waiting for the database");
    process.exit(0);
  };
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  try {
    return await pRetry(connect, {
      retries: Infinity,
      minTimeout: 500,
      maxTimeout: 30_000,
      shouldRetry: ({ error }) => isDatabaseUnreachable(error),
      onFailedAttempt: ({ error, attemptNumber }) => {
        if (isDatabaseUnreachable(error)) logger.warn({ err: error, attempt: attemptNumber }, "the database is not reachable yet; retrying");
      },
    });
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
  }
}
