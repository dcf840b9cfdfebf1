// `npm run start:split`: each service and the gateway as its own process, talking gRPC on
// ports RPC_BASE_PORT..RPC_BASE_PORT+4 (tenancy, plans, ingestion, analytics, webhooks), and the
// gateway's metrics on RPC_BASE_PORT+5.
// Without MONGODB_URL it starts the embedded database once and points every service at it.
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Type, loadConfigOrExit, logLevelField } from "@meter/lib/config";
import { startEmbeddedDb } from "@meter/lib/embedded-db";
import { createLogger } from "@meter/lib/logger";
import { SHUTDOWN_DEADLINE_MS, onShutdown } from "@meter/lib/process";
import { supervise, type SupervisedProcess } from "@meter/lib/supervise";
import { LOCAL_PROTECTION } from "@meter/gateway/config";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SERVICES = ["tenancy", "plans", "ingestion", "analytics", "webhooks"] as const;

const config = loadConfigOrExit(
  Type.Object({
    PORT: Type.Integer({ default: 8080, minimum: 0, maximum: 65535 }),
    HOST: Type.String({ default: "127.0.0.1" }),
    RPC_BASE_PORT: Type.Integer({ default: 9091, minimum: 1, maximum: 65530 }),
    MONGODB_URL: Type.Optional(Type.String({ minLength: 1 })),
    MONGODB_DB_PREFIX: Type.String({ default: "meter", pattern: "^[A-Za-z0-9_-]+$" }),
    DATA_DIR: Type.String({ default: "./data" }),
    LOG_LEVEL: logLevelField,
  }), "meter");
const logger = createLogger("split", config.LOG_LEVEL);

// A first start builds the database for minutes: say so rather than sit silent.
const progress = (message: string) => logger.info(message);
let stopping = false;
const supervised: SupervisedProcess[] = [];
/** Something could not be kept running: stop the rest and exit non-zero so an outer supervisor can act. */
function exitUnrecoverable(reason: Error) {
  if (stopping) return;
  logger.fatal({ reason: reason.message }, `exiting: ${reason.message}`);
  void shutdown().finally(() => process.exit(1));
}
const embedded = config.MONGODB_URL
  ? undefined
  : await startEmbeddedDb(path.resolve(config.DATA_DIR, "db"), { progress, supervise: { logger, onGiveUp: exitUnrecoverable } });
const mongoUrl = config.MONGODB_URL ?? embedded!.url;
const urlOf = (i: number) => `http://127.0.0.1:${config.RPC_BASE_PORT + i}`;
const peerEnv = Object.fromEntries(SERVICES.map((s, i) => [`${s.toUpperCase()}_URL`, urlOf(i)]));

/**
 * Each process runs under a supervisor, as Kubernetes runs a pod: one that exits is started
 * again with backoff, on the same port, while the gateway answers 503 for the calls that need
 * it; five failures within a minute stop everything with exit code 1.
 */
async function launch(name: string, entry: string, env: Record<string, string>) {
  const start = () =>
    new Promise<ChildProcess>((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", "tsx", entry], {
        cwd: root,
        // Metrics on each process's own port: one METRICS_PORT from the environment would be
        // taken by the first process and refused to the others.
        env: { ...process.env, ...peerEnv, LOG_LEVEL: config.LOG_LEVEL, METRICS_PORT: "0", ...env },
        stdio: ["ignore", "inherit", "inherit"],
      });
      child.once("spawn", () => resolve(child));
      child.once("error", reject);
    });
  supervised.push(await supervise({ name, logger, start, onGiveUp: exitUnrecoverable }));
}

await Promise.all(
  SERVICES.map((s, i) =>
    launch(s, `services/${s}/main.ts`, {
      PORT: String(config.RPC_BASE_PORT + i),
      HOST: "127.0.0.1",
      MONGODB_URL: mongoUrl,
      MONGODB_DB: `${config.MONGODB_DB_PREFIX}_${s}`,
      // One machine, local use: the development key (with its warning) unless a key is given.
      ...(s === "webhooks" && { WEBHOOKS_ALLOW_DEVELOPMENT_KEY: process.env.WEBHOOKS_ALLOW_DEVELOPMENT_KEY ?? "true" }),
    }),
  ),
);
await launch("gateway", "gateway/main.ts", {
  PORT: String(config.PORT),
  HOST: config.HOST,
  // Its metrics on the port after the services' (never on its public port).
  METRICS_PORT: String(config.RPC_BASE_PORT + SERVICES.length),
  // One machine, one user: the local limits unless the caller chose others.
  RATE_LIMIT_PUBLIC_MAX: process.env.RATE_LIMIT_PUBLIC_MAX ?? String(LOCAL_PROTECTION.rateLimit.publicMax),
  RATE_LIMIT_KEY_MAX: process.env.RATE_LIMIT_KEY_MAX ?? String(LOCAL_PROTECTION.rateLimit.keyMax),
  RATE_LIMIT_AUTH_FAILURE_MAX: process.env.RATE_LIMIT_AUTH_FAILURE_MAX ?? String(LOCAL_PROTECTION.rateLimit.publicMax),
  RATE_LIMIT_PRODUCT_CREATE_MAX: process.env.RATE_LIMIT_PRODUCT_CREATE_MAX ?? String(LOCAL_PROTECTION.rateLimit.productCreateMax),
});
logger.info({ api: `http://${config.HOST}:${config.PORT}/api/v1` }, "split mode starting");

/** Each process gets SIGTERM and its own deadline; one still running just before ours is killed. */
const stopChild = (c: ChildProcess) =>
  new Promise<void>((resolve) => {
    c.once("exit", () => resolve());
    c.kill("SIGTERM");
    setTimeout(() => c.kill("SIGKILL"), SHUTDOWN_DEADLINE_MS).unref();
  });

async function shutdown() {
  stopping = true;
  await Promise.all(supervised.map((p) => p.stop(stopChild)));
  await embedded?.stop();
}
onShutdown(logger, shutdown, SHUTDOWN_DEADLINE_MS + 800);
