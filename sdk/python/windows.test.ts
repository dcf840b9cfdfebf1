// The Python client's windows against the real stack, with the test's clock: the stack runs in this
// process with ingestion reading the time from a file the Python test writes (its client's clock
// is set to the same), so a minute, a midnight or five hours pass without waiting for them.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";
import { pytest } from "./all-in-one.ts";
import { ensureVenv } from "./venv.ts";

const t = suite<{ stack?: TestStack; dir: string; clockFile: string }>("sdk/python: windows against the real stack, on the test's clock");

t.before(async (ctx) => {
  await ensureVenv();
  ctx.dir = mkdtempSync(path.join(tmpdir(), "py-windows-"));
  ctx.clockFile = path.join(ctx.dir, "clock");
  writeFileSync(ctx.clockFile, String(Date.now()));
  const file = ctx.clockFile;
  // Epoch milliseconds, as the Python test last wrote them (it replaces the file whole).
  const now = () => new Date(Number(readFileSync(file, "utf8")));
  ctx.stack = await startTestStack({ services: { ingestion: { now } } });
});

t.after(async (ctx) => {
  await ctx.stack?.close();
  rmSync(ctx.dir, { recursive: true, force: true });
});

t("pytest tests/test_windows_stack.py", async (ctx) => {
  const r = await pytest(["tests/test_windows_stack.py"], {
    METER_TEST_API_URL: ctx.stack!.apiUrl,
    METER_TEST_CLOCK_FILE: ctx.clockFile,
  });
  assert.ok(r.ok, r.output);
});

t.run();
