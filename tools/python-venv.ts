// A Python virtual environment made from a requirements file or a pyproject, kept while what it
// was made from is unchanged (a stamp of its hash in the environment). Packages are installed by
// uv (itself installed into the environment by pip): the same resolution as pip in about a third
// of the time, since it does not re-download what its cache holds. It compiles the installed
// modules once (`--compile-bytecode`): where PYTHONDONTWRITEBYTECODE is set, as on the machines
// the tests run on, Python never caches what it compiles, and every process paid about 3 s of
// CPU compiling openai, anthropic, langchain and pytest again on import (7.0 s against 3.9 s
// for importing them, measured).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

export interface VenvSpec {
  /** Where the environment lives. */
  dir: string;
  /** The interpreter it is made with, looked for only when the environment is made. */
  python: () => string;
  /** The file it is made from: a change of it makes the environment anew. */
  from: string;
  /** What `uv pip install` installs (run in the folder of `from`), e.g. ["-r", "requirements.txt"]. */
  install: string[];
  /** A program of the environment that must exist for it to count as made. */
  needs: string;
}

const UV_INSTALL = ["--quiet", "--compile-bytecode"];

function run(cmd: string, args: string[], cwd: string): void {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: "utf8",
    timeout: 15 * 60_000,
    maxBuffer: 64 << 20,
    env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: "1", UV_LINK_MODE: "copy" },
  });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed:\n${r.stdout ?? ""}${r.stderr ?? ""}${r.error?.message ?? ""}`);
}

/** Makes the environment unless it is current. Not safe against another process making it at once: callers lock. */
export function makeVenv(spec: VenvSpec): void {
  const stamp = path.join(spec.dir, ".made-from-sha256");
  // What it is made from, and how: a change of the recipe makes the environment anew too.
  const want = createHash("sha256").update(readFileSync(spec.from)).update(JSON.stringify([UV_INSTALL, spec.install])).digest("hex");
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === want && existsSync(path.join(spec.dir, "bin", spec.needs))) return;
  rmSync(spec.dir, { recursive: true, force: true });
  const cwd = path.dirname(spec.from);
  const python = path.join(spec.dir, "bin", "python");
  run(spec.python(), ["-m", "venv", spec.dir], cwd);
  run(python, ["-m", "pip", "install", "--quiet", "uv"], cwd);
  run(python, ["-m", "uv", "pip", "install", ...UV_INSTALL, "--python", python, ...spec.install], cwd);
  writeFileSync(stamp, want);
}
