// Entry point of the REST gateway as its own process (split mode, Kubernetes).
import "@meter/lib/v8-flags";
import { loadConfigOrExit, peerUrls } from "@meter/lib/config";
import { listenAddress } from "@meter/lib/listen-address";
import { createLogger } from "@meter/lib/logger";
import { onShutdown } from "@meter/lib/process";
import { serveMetrics } from "@meter/lib/rpc";
import { buildGateway } from "./app.ts";
import { connectClients } from "./clients.ts";
import { gatewayConfigSchema, protectionSettings } from "./config.ts";

const config = loadConfigOrExit(gatewayConfigSchema, "gateway");
const logger = createLogger("gateway", config.LOG_LEVEL);
const app = await buildGateway({
  clients: connectClients(peerUrls(config)),
  logger,
  authCacheTtlMs: config.AUTH_CACHE_TTL_MS,
  protection: protectionSettings(config),
  batchConcurrency: config.INGESTION_PRODUCT_CONCURRENCY,
  batchBytesInFlight: config.GATEWAY_BATCH_BYTES_IN_FLIGHT,
  batchShare: { share: config.INGESTION_PRODUCT_SHARE, windowMs: config.INGESTION_SHARE_WINDOW_MS },
});
const host = await listenAddress(config.HOST);
await app.listen({ port: config.PORT, host });
// Never on the public port: there only when METRICS_PORT names one (the manifests: 9100).
const metrics = config.METRICS_PORT !== 0 ? await serveMetrics({ port: config.METRICS_PORT, host, logger }) : undefined;
onShutdown(logger, async () => {
  await app.close();
  await metrics?.close();
});
