import fp from "fastify-plugin";

/** The portal routes, the only ones another origin's page may call. */
export const PORTAL_PREFIX = "/api/v1/portal/";

/**
 * CORS on /api/v1/portal/* and nowhere else. Any origin may read them: the portal token travels
 * in the Authorization header, never in a cookie, so no credentials are allowed. Answers (errors
 * included: a widget must read its 401 and 429) may also be loaded by another origin's page
 * (the widget's script), which the gateway's same-origin resource policy otherwise forbids.
 * Runs after the security headers' onSend hook (registered after it), so its policy wins here.
 */
export const portalCorsPlugin = fp(async (app) => {
  app.addHook("onSend", async (request, reply, payload) => {
    if (!request.url.startsWith(PORTAL_PREFIX)) return payload;
    reply.header("access-control-allow-origin", "*");
    reply.header("access-control-expose-headers", "retry-after, x-request-id");
    reply.header("cross-origin-resource-policy", "cross-origin");
    if (request.method === "OPTIONS") {
      reply.header("access-control-allow-methods", "GET, OPTIONS");
      reply.header("access-control-allow-headers", "authorization, content-type, x-request-id");
      reply.header("access-control-max-age", "600");
    }
    return payload;
  });
});
