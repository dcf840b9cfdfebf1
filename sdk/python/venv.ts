// The Python client's own virtual environment, made from pyproject.toml (extras dev, openai,
// anthropic, langchain) in sdk/python/.venv (git-ignored) and kept while pyproject.toml is unchanged.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const pythonRoot = path.dirname(fileURLToPath(import.meta.url));
const venv = path.join(pythonRoot, ".venv");
const stamp = path.join(venv, ".pyproject-sha256");

/** A program of the virtual environment. */
export const venvBin = (name: string) => path.join(venv, "bin", name);

export function run(cmd: string, args: string[], env: Record<string, string> = {}, timeoutMs = 20 * 60_000) {
  const r = spawnSync(cmd, args, { cwd: pythonRoot, env: { ...process.env, ...env }, encoding: "utf8", maxBuffer: 64 << 20, timeout: timeoutMs });
  return { ok: r.status === 0, output: `${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? `\n${r.error.message}` : ""}` };
}

export function ensureVenv(): void {
  const want = createHash("sha256").update(readFileSync(path.join(pythonRoot, "pyproject.toml"))).digest("hex");
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === want && existsSync(venvBin("pytest"))) return;
  rmSync(venv, { recursive: true, force: true });
  for (const [cmd, args] of [
    ["python3", ["-m", "venv", venv]],
    [venvBin("python"), ["-m", "pip", "install", "--quiet", "--upgrade", "pip"]],
    [venvBin("python"), ["-m", "pip", "install", "--quiet", "-e", ".[dev,openai,anthropic,langchain]"]],
  ] as const) {
    const r = run(cmd, [...args]);
    if (!r.ok) throw new Error(`${cmd} ${args.join(" ")} failed:\n${r.output}`);
  }
  writeFileSync(stamp, want);
}
