// The Python client library's checks, run by `npm test`: the project's own virtual environment
// (venv.ts), a real all-in-one stack, then pytest against it over HTTP, mypy --strict and ruff.
import os from "node:os";
import path from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { AllInOne } from "../../test/support/processes.ts";
import { pytest, withPythonStack } from "./all-in-one.ts";
import { run, venvBin } from "./venv.ts";

const py = suite<{ stack?: AllInOne }>("sdk/python");
withPythonStack(py, "py", { WEBHOOKS_ALLOW_INSECURE_URLS: "true" });

py("pytest: the library against the real stack over HTTP", async (ctx) => {
  // test_windows_stack.py needs the ingestion clock of the test: windows.test.ts runs it; test_busy_stack.py
  // a stack holding one batch at a time: busy.test.ts runs it; test_lease_lifetime_stack.py leases that lapse
  // soon after their lifetime: lease-lifetime.test.ts runs it.
  // Two pytest processes: the tests mostly wait (flush ticks, refreshes, the service), so a
  // second one halves this file's time at little CPU. Each test makes its own product.
  const r = await pytest(["tests", "-n", "2", "--ignore", "tests/test_windows_stack.py", "--ignore", "tests/test_busy_stack.py", "--ignore", "tests/test_lease_lifetime_stack.py"], {
    METER_TEST_API_URL: `${ctx.stack!.base}/api/v1`,
  });
  assert.ok(r.ok, r.output);
});

// mypy's incremental cache is kept outside the clone (as pip's is), so that a fresh clone on a
// machine that checked before starts warm: about 22 s of CPU cold, 2 s warm. mypy checks each
// cached module against its source's hash, so a cache of other sources is only slower, never wrong.
const MYPY_CACHE = path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), "meterline", "mypy");

py("mypy --strict", () => {
  const r = run(venvBin("mypy"), ["--strict", "--cache-dir", MYPY_CACHE, "src", "tests", "bench"]);
  assert.ok(r.ok, r.output);
});

py("ruff", () => {
  const r = run(venvBin("ruff"), ["check", "src", "tests", "bench"]);
  assert.ok(r.ok, r.output);
});

py.run();
