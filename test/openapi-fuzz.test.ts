// Schemathesis (tools/schemathesis) against the OpenAPI document a real all-in-one process
// serves, with the key of a fresh product: no failure of the checks on status codes, content
// types, response schemas, negative data and undeclared methods. A bounded, seeded run;
// `npm run fuzz:api` runs longer.
import { randomBytes } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { runSchemathesis } from "../tools/schemathesis/schemathesis.ts";
import { testMongoUrl } from "./support/database.ts";
import { startAllInOne, type AllInOne } from "./support/processes.ts";

const t = suite<{ aio?: AllInOne; apiKey: string }>("openapi-fuzz");

t.before(async (ctx) => {
  ctx.aio = await startAllInOne({ MONGODB_URL: await testMongoUrl(), MONGODB_DB_PREFIX: `fz${randomBytes(4).toString("hex")}` });
  const created = await ctx.aio.api.post("/products", { name: "Fuzzed product" });
  assert.is(created.status, 201);
  ctx.apiKey = created.body.api_key;
});

t.after(async (ctx) => {
  await ctx.aio?.proc.stop();
});

t("the served document and the service agree (Schemathesis, 0 failures)", async (ctx) => {
  const result = await runSchemathesis({ base: ctx.aio!.base, apiKey: ctx.apiKey, maxExamples: 8, seed: 38 });
  assert.ok(result.ok, `schemathesis: ${result.failures} failures\n${result.output}`);
  assert.ok(result.requests > 500, `schemathesis sent only ${result.requests} requests\n${result.output}`);
});

t.run();
