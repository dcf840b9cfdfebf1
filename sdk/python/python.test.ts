// The Python client library's checks, run by `npm test`: the project's own virtual environment
// (venv.ts), a real all-in-one stack, then pytest against it over HTTP, mypy --strict and ruff.
import { randomBytes } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { testMongoUrl } from "../../test/support/database.ts";
import { startAllInOne, type AllInOne } from "../../test/support/processes.ts";
import { ensureVenv, run, venvBin } from "./venv.ts";

const py = suite<{ stack?: AllInOne }>("sdk/python");

py.before(async (ctx) => {
  await ensureVenv();
  ctx.stack = await startAllInOne({
    MONGODB_URL: await testMongoUrl(),
    MONGODB_DB_PREFIX: `py${randomBytes(4).toString("hex")}`,
    WEBHOOKS_ALLOW_INSECURE_URLS: "true",
  });
});

py.after(async (ctx) => {
  await ctx.stack?.proc.stop();
});

py("pytest: the library against the real stack over HTTP", (ctx) => {
  // test_windows_stack.py needs the ingestion clock of the test: windows.test.ts runs it; test_busy_stack.py
  // a stack holding one batch at a time: busy.test.ts runs it.
  const r = run(venvBin("python"), ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", "--ignore", "tests/test_windows_stack.py", "--ignore", "tests/test_busy_stack.py"], {
    METER_TEST_API_URL: `${ctx.stack!.base}/api/v1`,
  });
  assert.ok(r.ok, r.output);
});

py("mypy --strict", () => {
  const r = run(venvBin("mypy"), ["--strict", "src", "tests", "bench"]);
  assert.ok(r.ok, r.output);
});

py("ruff", () => {
  const r = run(venvBin("ruff"), ["check", "src", "tests", "bench"]);
  assert.ok(r.ok, r.output);
});

py.run();
