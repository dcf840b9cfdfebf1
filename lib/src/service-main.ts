import type { Db } from "mongodb";
import type { Static, TObject, TProperties } from "typebox";
import { loadConfigOrExit } from "./config.ts";
import { createLogger, type Logger } from "./logger.ts";
import { connectMongo } from "./mongo.ts";
import { onShutdown } from "./process.ts";
import { untilReachable } from "./until-reachable.ts";
import { serveMetrics, serveRpc, type ServiceModule } from "./rpc.ts";
import { listenAddress } from "./listen-address.ts";

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
  const config = loadConfigOrExit(spec.configSchema, spec.name) as Static<TObject<P>> & BaseConfig;
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
  const host = await listenAddress(config.HOST);
  const server = await serveRpc({ modules: [module], port: config.PORT, host, logger, metrics: !apart });
  const metrics = apart ? await serveMetrics({ port: config.METRICS_PORT, host, logger }) : undefined;
  await module.start?.();
  logger.info({ port: server.port }, `${spec.name} service listening`);
  onShutdown(logger, async () => {
    // The port stops taking calls at once and answers those in flight while background work stops.
    await Promise.all([server.close(), module.stop?.()]);
    await metrics?.close();
    await mongo.close();
  });
}
