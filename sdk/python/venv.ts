// The Python client's own virtual environment, made from pyproject.toml (extras dev, openai,
// anthropic, langchain) in sdk/python/.venv (git-ignored) and kept while pyproject.toml is unchanged.
import { spawn, spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import lockfile from "proper-lockfile";
import { makeVenv } from "../../tools/python-venv.ts";

export const pythonRoot = path.dirname(fileURLToPath(import.meta.url));
const venv = path.join(pythonRoot, ".venv");

/** A program of the virtual environment. */
export const venvBin = (name: string) => path.join(venv, "bin", name);

export function run(cmd: string, args: string[], env: Record<string, string> = {}, timeoutMs = 20 * 60_000) {
  const r = spawnSync(cmd, args, { cwd: pythonRoot, env: { ...process.env, ...env }, encoding: "utf8", maxBuffer: 64 << 20, timeout: timeoutMs });
  return { ok: r.status === 0, output: `${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? `\n${r.error.message}` : ""}` };
}

/** As run(), without blocking the event loop: for tests whose stack runs in this process. */
export function runAsync(cmd: string, args: string[], env: Record<string, string> = {}): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    let out = "";
    const child = spawn(cmd, args, { cwd: pythonRoot, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("error", (err) => resolve({ ok: false, output: `${out}\n${err.message}` }));
    child.on("close", (code) => resolve({ ok: code === 0, output: out }));
  });
}

/**
 * Makes the virtual environment unless it is current. Held by a lock across processes: test
 * files run in parallel workers, and two of them making it at once each removed the other's.
 */
export async function ensureVenv(): Promise<void> {
  const release = await lockfile.lock(path.join(pythonRoot, "pyproject.toml"), {
    retries: { retries: 2_000, minTimeout: 200, maxTimeout: 1_000 },
    // The install runs synchronously for minutes, so the lock's mtime is not refreshed meanwhile: it
    // counts as abandoned (a crashed holder) only after 20 minutes.
    stale: 20 * 60_000,
  });
  try {
    makeVenv({ dir: venv, python: () => "python3", from: path.join(pythonRoot, "pyproject.toml"), install: ["-e", ".[dev,openai,anthropic,langchain]"], needs: "pytest" });
  } finally {
    await release();
  }
}
