import { optionalBodyOperations } from "../json-body.ts";
import fp from "fastify-plugin";
import swagger from "@fastify/swagger";
import scalar from "@scalar/fastify-api-reference";
import { ErrorBody } from "../schemas/common.ts";

type Operation = {
  operationId?: string;
  parameters?: { in: string; required?: boolean; schema?: { default?: unknown } }[];
  requestBody?: { required?: boolean };
  responses?: Record<string, unknown>;
};

/** Answers the gateway itself can give on any route, before or beside the route's own. */
const GATEWAY_ANSWERS: [status: number, description: string, withBody: boolean][] = [
  [415, "The body is not JSON (Content-Type)", true],
  [429, "Too many requests; retry after `Retry-After` seconds", false],
  [431, "Request headers or URL too large", false],
];

/**
 * The document as the service answers: a query parameter with a default may be left out
 * (TypeBox lists every property without `Optional` as required, defaults included), and the
 * statuses of GATEWAY_ANSWERS are listed on every operation they can reach.
 */
function asServed<T extends object>(doc: T): T {
  const paths = (doc as { paths?: Record<string, Record<string, unknown>> }).paths ?? {};
  for (const item of Object.values(paths)) {
    for (const op of Object.values(item) as Operation[]) {
      if (!op?.responses) continue;
      for (const p of op.parameters ?? []) if (p.in === "query" && p.schema?.default !== undefined) p.required = false;
      // A body of options with defaults may be left out (json-body.ts).
      if (op.requestBody && op.operationId && optionalBodyOperations.has(op.operationId)) op.requestBody.required = false;
      for (const [status, description, withBody] of GATEWAY_ANSWERS) {
        if (withBody && !op.requestBody) continue;
        op.responses[status] ??= { description, content: { "application/json": { schema: ErrorBody } } };
      }
    }
  }
  return doc;
}

/**
 * Every route's schema feeds an OpenAPI 3.1 document at /api/v1/openapi.json and a
 * reference page at /api/v1/docs, so routes document themselves as they are added.
 */
export const docsPlugin = fp(async (app) => {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Meterline API",
        version: "1.0.0",
        license: { name: "Apache-2.0", identifier: "Apache-2.0" },
        description:
          "Usage-limit metering: per-user budgets, gates, usage, analytics and webhooks. " +
          "Errors are JSON bodies {\"detail\": string}; body validation failures (422) also list `issues`. " +
          "The API guide (docs/api.md in the Meterline repository) explains every route in prose: plan fields and their defaults, " +
          "billing periods, gates and gate events, the change marker, budget leases, and how to verify webhook signatures.",
      },
      servers: [{ url: "/" }],
      components: {
        securitySchemes: {
          bearer: { type: "http", scheme: "bearer", description: "API key from POST /api/v1/products" },
          portalToken: { type: "http", scheme: "bearer", description: "Portal token from POST /api/v1/users/{user_id}/portal-tokens; reads GET /api/v1/portal/me only" },
        },
      },
      security: [{ bearer: [] }],
    },
    transformObject: (doc) => ("openapiObject" in doc ? asServed(doc.openapiObject) : doc.swaggerObject),
  });
  app.get("/api/v1/openapi.json", { schema: { hide: true }, config: { public: true } }, async () => app.swagger());
  await app.register(scalar, {
    routePrefix: "/api/v1/docs",
    // No fonts from Scalar's servers: the page loads nothing from another origin (its CSP).
    // Nor Scalar's own services on a self-hosted reference: no AI chat, MCP or deploy controls.
    configuration: {
      url: "/api/v1/openapi.json",
      title: "Meterline API",
      withDefaultFonts: false,
      agent: { disabled: true },
      mcp: { disabled: true },
      showDeveloperTools: "never",
    },
  });
});
