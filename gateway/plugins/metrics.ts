import fp from "fastify-plugin";
import { httpDuration, httpRequests } from "@meter/lib/metrics";

/**
 * Counts and times every answer by method, route template and status, and serves a shallow
 * readiness check at /readyz (the process answers HTTP). /readyz deliberately asks no backend:
 * one slow service must not take every gateway out of rotation; the deep check stays at
 * /api/v1/health. The metrics themselves are never served on this public port (they show
 * platform-wide volume): see METRICS_PORT (gateway/main.ts) and the internal port of all-in-one.
 */
export const metricsPlugin = fp(async (app) => {
  app.addHook("onResponse", async (request, reply) => {
    const labels = { method: request.method, route: request.routeOptions.url ?? "unmatched", status: String(reply.statusCode) };
    httpRequests.inc(labels);
    httpDuration.observe(labels, reply.elapsedTime / 1000);
  });
  const internal = { schema: { hide: true }, config: { public: true, rateLimit: false } } as const;
  app.get("/readyz", internal, async () => ({ status: "ok" }));
});
