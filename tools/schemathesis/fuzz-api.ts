// `npm run fuzz:api`: a longer Schemathesis run than the test suite's (test/openapi-fuzz.test.ts)
// against a fresh all-in-one process, with the key of a fresh product. FUZZ_MAX_EXAMPLES
// (default 200) test cases per operation; FUZZ_SEED makes a run repeatable.
import { randomBytes } from "node:crypto";
import { stopTestDatabase, testMongoUrl } from "../../test/support/database.ts";
import { startAllInOne } from "../../test/support/processes.ts";
import { runSchemathesis } from "./schemathesis.ts";

const maxExamples = Number(process.env.FUZZ_MAX_EXAMPLES ?? 200);
const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;
const aio = await startAllInOne({
  MONGODB_URL: await testMongoUrl(),
  MONGODB_DB_PREFIX: `fuzz${randomBytes(4).toString("hex")}`,
});
try {
  const created = await aio.api.post("/products", { name: "Fuzzed product" });
  if (created.status !== 201) throw new Error(`creating a product failed: ${created.status} ${JSON.stringify(created.body)}`);
  const started = Date.now();
  const result = await runSchemathesis({ base: aio.base, apiKey: created.body.api_key, maxExamples, seed });
  console.log(result.output);
  console.log(`schemathesis: ${result.requests} requests, ${result.failures} failures, ${Math.round((Date.now() - started) / 1000)} s (max ${maxExamples} examples per operation)`);
  if (!result.ok) {
    // What the service logged at error level: the cause behind a 500 the report names.
    const errors = aio.proc.output().split("\n").filter((l) => /"level":(50|60)/.test(l));
    console.log(`the service's error log (${errors.length} lines):\n${errors.slice(0, 20).join("\n")}`);
  }
  process.exitCode = result.ok ? 0 : 1;
} finally {
  await aio.proc.stop();
  await stopTestDatabase();
}
