import fp from "fastify-plugin";
import type { ServiceClients } from "../clients.ts";

declare module "fastify" {
  interface FastifyInstance {
    services: ServiceClients;
  }
}

/** Makes the service clients available to every route as `app.services`. */
export const servicesPlugin = fp<{ clients: ServiceClients }>(async (app, opts) => {
  app.decorate("services", opts.clients);
});
