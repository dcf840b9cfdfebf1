import fp from "fastify-plugin";
import swagger from "@fastify/swagger";
import scalar from "@scalar/fastify-api-reference";

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
        license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
        description:
          "Usage-limit metering: per-user budgets, gates, usage, analytics and webhooks. " +
          "Errors are JSON bodies {\"detail\": string}; body validation failures (422) also list `issues`. " +
          "The API guide (docs/api.md in the Meter repository) explains every route in prose: plan fields and their defaults, " +
          "billing periods, gates and gate events, the change marker, budget leases, and how to verify webhook signatures.",
      },
      servers: [{ url: "/" }],
      components: {
        securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "API key from POST /api/v1/products" } },
      },
      security: [{ bearer: [] }],
    },
  });
  app.get("/api/v1/openapi.json", { schema: { hide: true }, config: { public: true } }, async () => app.swagger());
  await app.register(scalar, {
    routePrefix: "/api/v1/docs",
    configuration: { url: "/api/v1/openapi.json", title: "Meterline API" },
  });
});
