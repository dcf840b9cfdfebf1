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
  // The kubelet asks every few seconds: two log lines an ask would be most of a pod's log.
  const internal = { schema: { hide: true }, config: { public: true, rateLimit: false }, logLevel: "silent" } as const;
  app.get("/readyz", internal, async () => ({ status: "ok" }));
});
