/**
 * JSON request bodies. Many HTTP clients send `Content-Type: application/json` on every request,
 * also a DELETE or a POST that carries nothing: for a route that takes no body, an empty body is
 * no body. A route that takes one still answers an empty body with Fastify's empty-body error
 * (mapped in errors.ts).
 */
import type { FastifyInstance } from "fastify";

// Any logger and type provider: only the content-type parser API is used.
export function parseJsonBodies(app: FastifyInstance<any, any, any, any, any>): void {
  const parse = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    if (body.length === 0 && request.routeOptions.schema?.body === undefined) return done(null, undefined);
    parse(request, body as string, done);
  });
}
