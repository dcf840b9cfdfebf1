// What the Python client's stack tests share: the virtual environment made, an all-in-one process
// on fresh databases, and pytest run against its API.
import { randomBytes } from "node:crypto";
import { suite, type Test } from "uvu";
import * as assert from "uvu/assert";
import { testMongoUrl } from "../../test/support/database.ts";
import { startAllInOne, type AllInOne } from "../../test/support/processes.ts";
import { ensureVenv, runAsync, venvBin } from "./venv.ts";

/** A suite's all-in-one process (`ctx.stack`; databases named `<prefix><random>_…`, `env` besides), started once the virtual environment is made and stopped after the suite. */
export function withPythonStack(t: Test<{ stack?: AllInOne }>, prefix: string, env: Record<string, string> = {}): void {
  t.before(async (ctx) => {
    await ensureVenv();
    ctx.stack = await startAllInOne({ MONGODB_URL: await testMongoUrl(), MONGODB_DB_PREFIX: `${prefix}${randomBytes(4).toString("hex")}`, ...env });
  });
  t.after(async (ctx) => {
    await ctx.stack?.proc.stop();
  });
}

/** pytest (quiet, no cache) in the virtual environment with `args`, and `env` besides (METER_TEST_API_URL: the API it tests). */
export function pytest(args: string[], env: Record<string, string>): Promise<{ ok: boolean; output: string }> {
  return runAsync(venvBin("python"), ["-m", "pytest", "-q", "-p", "no:cacheprovider", ...args], env);
}

/**
 * A suite of its own for one pytest file that needs a stack configured apart (`env`: the
 * all-in-one's environment besides): python.test.ts leaves that file out.
 */
export function pytestFileSuite(name: string, prefix: string, env: Record<string, string>, file: string): void {
  const t = suite<{ stack?: AllInOne }>(name);
  withPythonStack(t, prefix, env);
  t(`pytest ${file}`, async (ctx) => {
    const r = await pytest([file], { METER_TEST_API_URL: `${ctx.stack!.base}/api/v1` });
    assert.ok(r.ok, r.output);
  });
  t.run();
}
