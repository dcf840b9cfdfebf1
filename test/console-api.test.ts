// The console's API types are generated from the gateway's OpenAPI document and committed: a
// route or schema change must regenerate them (`npm run generate -w console`), and then the
// console's type check (part of `npm run typecheck`) fails wherever the console no longer fits.
import { readFile } from "node:fs/promises";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { SCHEMA_FILE } from "../console/scripts/generate-api.ts";
import { apiTypes } from "../console/scripts/openapi.ts";

test("console/src/api/schema.ts matches the OpenAPI document", async () => {
  const committed = await readFile(SCHEMA_FILE, "utf8");
  assert.ok(committed === (await apiTypes()), "console/src/api/schema.ts is stale: run `npm run generate -w console` and commit it");
});

test.run();
