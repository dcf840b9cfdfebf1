import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { HealthCheckResponse_ServingStatus as ServingStatus } from "@meter/proto/grpc/health/v1/health_pb";
import { SERVICE_NAMES } from "../clients.ts";
import { rpcOptions } from "../rpc-options.ts";
import { errors, publicRoute } from "../schemas/common.ts";

const HealthBody = Type.Object({
  status: Type.Union([Type.Literal("ok"), Type.Literal("degraded")]),
  database: Type.Union([Type.Literal("connected"), Type.Literal("disconnected")]),
});

/**
 * Asks every service whether it reaches its database. Answers 200 in all cases: a service or
 * database that does not answer in time makes the status "degraded", never an error.
 */
export const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    "/health",
    publicRoute({ operationId: "getHealth", summary: "Service health", tags: ["health"], response: { 200: HealthBody, ...errors(429) } }),
    async (request) => {
      const results = await Promise.all(
        SERVICE_NAMES.map((name) =>
          app.services.health[name]
            .check({ service: "" }, { ...rpcOptions(request), timeoutMs: 2_000 })
            .then((r) => r.status === ServingStatus.SERVING)
            .catch(() => false),
        ),
      );
      const ok = results.every(Boolean);
      return { status: ok ? ("ok" as const) : ("degraded" as const), database: ok ? ("connected" as const) : ("disconnected" as const) };
    },
  );
};
