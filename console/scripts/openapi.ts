// The console's API types come from the gateway's own OpenAPI document, built here without
// any service behind it (the document depends on the routes' schemas alone).
import openapiTS, { astToString } from "openapi-typescript";
import { buildGateway } from "@meter/gateway";
import type { ServiceClients } from "@meter/gateway/clients";
import { createLogger } from "@meter/lib/logger";

export async function openApiDocument(): Promise<Record<string, unknown>> {
  const app = await buildGateway({ clients: {} as ServiceClients, logger: createLogger("openapi", "silent") });
  await app.ready();
  const doc = app.swagger() as unknown as Record<string, unknown>;
  await app.close();
  return doc;
}

const HEADER = "// Generated from the gateway's OpenAPI document by `npm run generate -w console`; do not edit.\n";

/** The TypeScript the console's API layer is typed by. */
export async function apiTypes(): Promise<string> {
  const ast = await openapiTS(JSON.parse(JSON.stringify(await openApiDocument())));
  return HEADER + astToString(ast);
}
