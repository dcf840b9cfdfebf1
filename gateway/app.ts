import { randomUUID } from "node:crypto";
import Fastify, { LogController } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { REQUEST_ID_HEADER, isAcceptableRequestId } from "@meter/lib/context";
import type { Logger } from "@meter/lib/logger";
import type { ServiceClients } from "./clients.ts";
import { LOCAL_PROTECTION, type Protection } from "./config.ts";
import { bodyDeadline, boundedShutdown, limitConnections, resolveConnectionLimits, serverTimeouts } from "./connection-limits.ts";
import { errorHandler, notFoundHandler } from "./errors.ts";
import { parseJsonBodies } from "./json-body.ts";
import { clientErrorHandler, frameworkErrors, refuseMalformedQueries } from "./framework-errors.ts";
import { methodNotAllowed } from "./method-not-allowed.ts";
import { admissionPlugin } from "./plugins/admission.ts";
import { authPlugin } from "./plugins/auth.ts";
import { consolePlugin } from "./plugins/console.ts";
import { docsPlugin } from "./plugins/docs.ts";
import { metricsPlugin } from "./plugins/metrics.ts";
import { portalCorsPlugin } from "./plugins/portal-cors.ts";
import { securityHeadersPlugin } from "./plugins/security-headers.ts";
import { rateLimitPlugin } from "./plugins/rate-limit.ts";
import { servicesPlugin } from "./plugins/services.ts";
import { apiRoutes } from "./routes/index.ts";
import { servedServices } from "@meter/lib/metrics";
import { serializerCompiler } from "./serialization.ts";
import { closedQueries, validatorCompiler } from "./validation.ts";

export interface GatewayOptions {
  clients: ServiceClients;
  logger: Logger;
  /** How long a verified API key is trusted before asking the tenancy service again. */
  authCacheTtlMs?: number;
  /** The clock (ms, monotonic) of the verified keys' cache, for tests; performance.now() by default. */
  authClock?: () => number;
  /** Largest request body in bytes (batch routes may set their own). */
  bodyLimit?: number;
  /** Rate limits, refused-key cache and trusted proxies; generous local defaults when absent. */
  protection?: Protection;
  /** Ingestion batches of one product admitted at once (plugins/admission.ts); 0: no limit. Default 4. */
  batchConcurrency?: number;
  /** Longest wait for admission, at the pace of the product's recent batches; past it 429 with Retry-After. Default 5 000; 0: none. */
  batchMaxWaitMs?: number;
  /** A product's share of recent time while another is served (lib/src/fair-share.ts); off when absent. */
  batchShare?: { share: number; windowMs: number };
  /** Bytes of batch bodies held at once, all products together (GATEWAY_BATCH_BYTES_IN_FLIGHT); 0: no bound. Default 96 MiB. */
  batchBytesInFlight?: number;
}

/** The REST gateway: JSON over HTTP mapped to the services' RPCs. Listens only when told to. */
export async function buildGateway(opts: GatewayOptions) {
  const protection = opts.protection ?? LOCAL_PROTECTION;
  const connections = resolveConnectionLimits(protection.connections);
  const app = Fastify({
    ...serverTimeouts(connections),
    loggerInstance: opts.logger,
    // The caller's X-Request-Id is kept only when acceptable (bounded, log-safe); see genReqId.
    requestIdHeader: false,
    logController: new LogController({ requestIdLogLabel: "requestId" }),
    genReqId: (req) => {
      const incoming = req.headers[REQUEST_ID_HEADER];
      return typeof incoming === "string" && isAcceptableRequestId(incoming) ? incoming : randomUUID();
    },
    // A hop count is accepted at run time (proxy-addr), though the typings leave it out.
    trustProxy: protection.trustProxy as boolean | string[],
    bodyLimit: opts.bodyLimit ?? 1024 * 1024,
    // external_user_id may be 255 characters, which URL-encode to far more than the default 100.
    routerOptions: { maxParamLength: 4096 },
    frameworkErrors,
    clientErrorHandler,
  }).withTypeProvider<TypeBoxTypeProvider>();

  limitConnections(app.server, connections);
  app.addHook("preClose", boundedShutdown(app.server, connections));
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  parseJsonBodies(app);
  app.addHook("onRoute", closedQueries);
  app.addHook("onRequest", refuseMalformedQueries);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(notFoundHandler);
  // JSON is the only body the API reads: any other type is 415, not a string failing validation.
  app.removeContentTypeParser("text/plain");
  const otherMethods = methodNotAllowed(app);
  app.addHook("onSend", async (request, reply) => {
    reply.header(REQUEST_ID_HEADER, request.id);
  });

  await app.register(securityHeadersPlugin);
  await app.register(portalCorsPlugin);
  await app.register(servicesPlugin, { clients: opts.clients });
  await app.register(metricsPlugin);
  await app.register(rateLimitPlugin, protection.rateLimit);
  await app.register(docsPlugin);
  await app.register(consolePlugin);
  await app.register(
    async (api) => {
      await api.register(authPlugin, {
        cacheTtlMs: opts.authCacheTtlMs ?? 2_000,
        clock: opts.authClock,
        negativeCacheTtlMs: protection.negativeCacheTtlMs,
        failureMax: protection.rateLimit.authFailureMax ?? protection.rateLimit.publicMax,
        windowMs: protection.rateLimit.windowMs,
      });
      await api.register(admissionPlugin, { limit: opts.batchConcurrency ?? 4, maxWaitMs: opts.batchMaxWaitMs, share: opts.batchShare, maxBytes: opts.batchBytesInFlight });
      // After admission: a batch's wait for its turn does not count against its body's time.
      bodyDeadline(api, connections);
      for (const routes of apiRoutes) await api.register(routes);
    },
    { prefix: "/api/v1" },
  );
  otherMethods.answer();
  app.addHook("onListen", async () => {
    servedServices.set({ service: "gateway" }, 1);
  });
  return app;
}

export type Gateway = Awaited<ReturnType<typeof buildGateway>>;
