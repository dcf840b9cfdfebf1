import type { FastifyInstance } from "fastify";

/** The methods an OpenAPI document can name, and QUERY (RFC 10008), which Fastify routes too. */
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "QUERY"];

/**
 * 405 with `Allow` for a method a known path does not serve (rather than 404): records the
 * methods of every route as it is added; `answer()`, called once every route is registered,
 * adds one route per path for the other methods. Wildcard paths (static files) are left out.
 * Any instance will do (logger, type provider): the routes added here read nothing typed.
 */
export function methodNotAllowed(app: FastifyInstance<any, any, any, any, any>): { answer(): void } {
  const byUrl = new Map<string, Set<string>>();
  let answered = false;
  app.addHook("onRoute", (route) => {
    if (answered || route.url.includes("*")) return;
    const methods = byUrl.get(route.url) ?? new Set<string>();
    for (const m of [route.method].flat()) methods.add(m);
    if (methods.has("GET")) methods.add("HEAD");
    byUrl.set(route.url, methods);
  });
  return {
    answer() {
      answered = true;
      for (const [url, methods] of [...byUrl]) {
        const others = METHODS.filter((m) => !methods.has(m));
        if (others.length === 0) continue;
        const allow = METHODS.filter((m) => methods.has(m)).join(", ");
        app.route({
          method: others,
          url,
          schema: { hide: true },
          config: { public: true },
          // Answered before the body is read: its content type or size are beside the point.
          onRequest: async (request, reply) =>
            reply.status(405).header("allow", allow).send({ detail: `${request.method} is not allowed here; allowed: ${allow}` }),
          handler: async () => undefined,
        });
      }
    },
  };
}
