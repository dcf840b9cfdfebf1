// The Python client library's checks, run by `npm test`: the project's own virtual environment
// (made from pyproject.toml, kept while it is unchanged), a real all-in-one stack, then pytest
// against it over HTTP, mypy --strict and ruff.
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { testMongoUrl } from "../../test/support/database.ts";
import { startAllInOne, type AllInOne } from "../../test/support/processes.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const venv = path.join(here, ".venv");
const bin = (name: string) => path.join(venv, "bin", name);
const stamp = path.join(venv, ".pyproject-sha256");

function run(cmd: string, args: string[], env: Record<string, string> = {}, timeoutMs = 20 * 60_000) {
  const r = spawnSync(cmd, args, { cwd: here, env: { ...process.env, ...env }, encoding: "utf8", maxBuffer: 64 << 20, timeout: timeoutMs });
  return { ok: r.status === 0, output: `${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? `\n${r.error.message}` : ""}` };
}

/** The venv from pyproject.toml's extras; rebuilt only when pyproject.toml changed. */
function ensureVenv(): void {
  const want = createHash("sha256").update(readFileSync(path.join(here, "pyproject.toml"))).digest("hex");
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === want && existsSync(bin("pytest"))) return;
  rmSync(venv, { recursive: true, force: true });
  for (const [cmd, args] of [
    ["python3", ["-m", "venv", venv]],
    [bin("python"), ["-m", "pip", "install", "--quiet", "--upgrade", "pip"]],
    [bin("python"), ["-m", "pip", "install", "--quiet", "-e", ".[dev,openai,anthropic,langchain]"]],
  ] as const) {
    const r = run(cmd, [...args]);
    if (!r.ok) throw new Error(`${cmd} ${args.join(" ")} failed:\n${r.output}`);
  }
  writeFileSync(stamp, want);
}

const py = suite<{ stack?: AllInOne }>("sdk/python");

py.before(async (ctx) => {
  ensureVenv();
  ctx.stack = await startAllInOne({
    MONGODB_URL: await testMongoUrl(),
    MONGODB_DB_PREFIX: `py${randomBytes(4).toString("hex")}`,
    WEBHOOKS_ALLOW_INSECURE_URLS: "true",
    LOG_LEVEL: "warn",
  });
});

py.after(async (ctx) => {
  await ctx.stack?.proc.stop();
});

py("pytest: the library against the real stack over HTTP", (ctx) => {
  const r = run(bin("python"), ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], { METER_TEST_API_URL: `${ctx.stack!.base}/api/v1` });
  assert.ok(r.ok, r.output);
});

py("mypy --strict", () => {
  const r = run(bin("mypy"), ["--strict", "src", "tests"]);
  assert.ok(r.ok, r.output);
});

py("ruff", () => {
  const r = run(bin("ruff"), ["check", "src", "tests"]);
  assert.ok(r.ok, r.output);
});

py.run();
