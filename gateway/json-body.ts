/**
 * JSON request bodies: UTF-8 (JSON text is UTF-8; a byte that is not would be read as U+FFFD,
 * and "jos\xe9" and "jos\xe8" would then name one user: refused, 400). An object key
 * `__proto__`, or `constructor` holding `prototype` (valid JSON, and in free-form metadata
 * harmless as data), is left out rather than refusing the whole body: a batch refused for one
 * metadata key would lose every event in it. Many HTTP clients send `Content-Type: application/json` on every request,
 * also a DELETE or a POST that carries nothing: for a route that takes no body, an empty body is
 * no body. A route whose body holds only options with defaults (`config.optionalBody`) takes no
 * body, or an empty one, as `{}`. Any other route that takes one still answers an empty body with
 * Fastify's empty-body error (mapped in errors.ts).
 */
import type { FastifyInstance } from "fastify";
import { HttpError } from "./errors.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** Every field of the route's body is optional: a request without one is `{}`. */
    optionalBody?: boolean;
  }
}

/** operationIds of the routes whose body may be left out: their OpenAPI requestBody is not required (plugins/docs.ts). */
export const optionalBodyOperations = new Set<string>();

// Any logger and type provider: only the content-type parser and hook APIs are used.
export function parseJsonBodies(app: FastifyInstance<any, any, any, any, any>): void {
  const parse = app.getDefaultJsonParser("remove", "remove");
  const utf8 = new TextDecoder("utf-8", { fatal: true });
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    if (body.length === 0 && (request.routeOptions.schema?.body === undefined || request.routeOptions.config.optionalBody)) return done(null, undefined);
    let text: string;
    try {
      text = utf8.decode(body as Buffer);
    } catch {
      return done(new HttpError(400, "request body is not valid UTF-8: JSON text must be UTF-8 (a byte that is not would change the ids and text it is in)"), undefined);
    }
    parse(request, text, done);
  });
  // Only on the routes that ask for it: no hook on every other request.
  app.addHook("onRoute", (route) => {
    if (!route.config?.optionalBody) return;
    const op = (route.schema as { operationId?: string } | undefined)?.operationId;
    if (op) optionalBodyOperations.add(op);
    const fill = (request: { body: unknown }, _reply: unknown, done: () => void) => {
      // Only a missing body: a JSON `null` is a body of the wrong type, refused by the schema.
      if (request.body === undefined) request.body = {};
      done();
    };
    route.preValidation = [...[route.preValidation ?? []].flat(), fill];
  });
}
