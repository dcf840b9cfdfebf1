import fp from "fastify-plugin";
import { httpDuration, httpRequests } from "@meter/lib/metrics";
import { metricsRoute } from "@meter/lib/rpc";

/**
 * Counts and times every answer by method, route template and status, and serves the
 * process's metrics at /metrics and a shallow readiness check at /readyz (the process answers
 * HTTP). /readyz deliberately asks no backend: one slow service must not take every gateway
 * out of rotation; the deep check stays at /api/v1/health.
 */
export const metricsPlugin = fp<{ serveMetrics?: boolean }>(async (app, opts) => {
  app.addHook("onResponse", async (request, reply) => {
    const labels = { method: request.method, route: request.routeOptions.url ?? "unmatched", status: String(reply.statusCode) };
    httpRequests.inc(labels);
    httpDuration.observe(labels, reply.elapsedTime / 1000);
  });
  const internal = { schema: { hide: true }, config: { public: true, rateLimit: false } } as const;
  // Off when the process serves metrics on a port of its own (METRICS_PORT).
  if (opts.serveMetrics ?? true) app.get("/metrics", internal, metricsRoute);
  app.get("/readyz", internal, async () => ({ status: "ok" }));
});
