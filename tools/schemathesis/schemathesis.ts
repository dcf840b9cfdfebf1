// Schemathesis (a pinned Python tool, requirements.txt) against the OpenAPI document a running
// gateway serves. Its virtual environment is made here, in tools/schemathesis/.venv
// (git-ignored), and kept while requirements.txt is unchanged.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { makeVenv } from "../python-venv.ts";

const root = path.dirname(fileURLToPath(import.meta.url));
const venv = path.join(root, ".venv");
const requirements = path.join(root, "requirements.txt");
const st = path.join(venv, "bin", "st");

/**
 * The checks of Schemathesis' documentation about status codes, content types, response
 * schemas, negative data and methods: every one must pass.
 */
export const CHECKS = [
  "not_a_server_error",
  "status_code_conformance",
  "content_type_conformance",
  "response_schema_conformance",
  "negative_data_rejection",
  "unsupported_method",
] as const;

const isRecentPython = (cmd: string) =>
  spawnSync(cmd, ["-c", "import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)"], { stdio: "ignore" }).status === 0;

/**
 * The interpreter of the environment: SCHEMATHESIS_PYTHON, else the first Python 3.12+ found
 * (on PATH, then among pyenv's versions), else python3. Under 3.11, Hypothesis' description of
 * the recursive strategy of free-form objects (event metadata) can hit a CPython AST recursion
 * error, which Schemathesis reports as an error of the run.
 */
function python(): string {
  if (process.env.SCHEMATHESIS_PYTHON) return process.env.SCHEMATHESIS_PYTHON;
  const pyenv = spawnSync("pyenv", ["root"], { encoding: "utf8" });
  const pyenvVersions =
    pyenv.status === 0
      ? (spawnSync("pyenv", ["versions", "--bare"], { encoding: "utf8" }).stdout ?? "")
          .split("\n")
          .filter((v) => /^3\.\d+\.\d+$/.test(v.trim()))
          .sort((a, b) => b.localeCompare(a, undefined, { numeric: true }))
          .map((v) => path.join(pyenv.stdout.trim(), "versions", v.trim(), "bin", "python3"))
      : [];
  return ["python3.13", "python3.12", "python3", ...pyenvVersions].find(isRecentPython) ?? "python3";
}

/** Creates (or reuses) the virtual environment holding the pinned Schemathesis. */
export function ensureSchemathesis(): void {
  makeVenv({ dir: venv, python, from: requirements, install: ["-r", requirements], needs: "st" });
}

export interface FuzzResult {
  ok: boolean;
  /** Test cases (requests) Schemathesis sent, from its JSON report. */
  requests: number;
  /** Distinct failures it found. */
  failures: number;
  output: string;
}

/**
 * Runs Schemathesis against `base` (e.g. http://127.0.0.1:8080), reading the document at
 * /api/v1/openapi.json and sending `apiKey` on every request.
 */
export async function runSchemathesis(opts: { base: string; apiKey: string; maxExamples: number; seed?: number; workers?: number }): Promise<FuzzResult> {
  ensureSchemathesis();
  const reports = mkdtempSync(path.join(tmpdir(), "schemathesis-"));
  const ndjson = path.join(reports, "events.ndjson");
  const args = [
    "--config-file", path.join(root, "schemathesis.toml"),
    "run",
    `${opts.base}/api/v1/openapi.json`,
    "--checks", CHECKS.join(","),
    "--max-examples", String(opts.maxExamples),
    "--workers", String(opts.workers ?? 2),
    "--header", `Authorization: Bearer ${opts.apiKey}`,
    // Its stateful phase would otherwise revoke the key it runs with (after creating another),
    // and every later request would be a 401.
    "--exclude-operation-id", "revokeKey",
    "--request-timeout", "30",
    "--report", "ndjson",
    "--report-ndjson-path", ndjson,
    "--no-color",
    ...(opts.seed === undefined ? [] : ["--seed", String(opts.seed)]),
  ];
  let output = "";
  const code = await new Promise<number | null>((resolve, reject) => {
    // Its own config file would otherwise be looked for in the working directory.
    const child = spawn(st, args, { cwd: reports, env: { ...process.env, NO_COLOR: "1", COLUMNS: "160" } });
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", reject);
    child.on("close", resolve);
  });
  const counts = countFromReport(ndjson);
  rmSync(reports, { recursive: true, force: true });
  return { ok: code === 0, ...counts, output };
}

/** Requests and failures from the run's NDJSON events. */
function countFromReport(file: string): { requests: number; failures: number } {
  if (!existsSync(file)) return { requests: 0, failures: 0 };
  let requests = 0;
  const failures = new Set<string>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.trim()) continue;
    const event = JSON.parse(line) as Record<string, any>;
    const finished = event.ScenarioFinished;
    if (!finished) continue;
    for (const step of Object.values(finished.recorder?.interactions ?? {}) as any[]) if (step?.response) requests++;
    for (const [caseId, checks] of Object.entries(finished.recorder?.checks ?? {}) as [string, any[]][]) {
      for (const c of checks) if (String(c.status).toLowerCase() === "failure") failures.add(`${c.name}:${caseId}`);
    }
  }
  return { requests, failures: failures.size };
}
