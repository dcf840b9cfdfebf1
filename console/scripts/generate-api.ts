// Writes console/src/api/schema.ts from the gateway's OpenAPI document (a test fails when stale).
import { writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { apiTypes } from "./openapi.ts";

export const SCHEMA_FILE = fileURLToPath(new URL("../src/api/schema.ts", import.meta.url));

if (import.meta.url === `file://${process.argv[1]}`) {
  await writeFile(SCHEMA_FILE, await apiTypes());
  console.log(`wrote ${SCHEMA_FILE}`);
}
