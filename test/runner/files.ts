// Which test files exist, and which of them are quick. Every *.test.ts under the searched
// folders is a test file of `npm test`; nothing is listed by hand, so a new file is never left out.
import { existsSync, readFileSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SEARCH = ["lib", "services", "gateway", "cmd", "test", "sdk"];

async function findTests(dir: string, out: string[] = []): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    if (e.name === "node_modules" || e.name.startsWith(".")) continue;
    const full = path.join(dir, e.name);
    if (e.isDirectory()) await findTests(full, out);
    else if (e.name.endsWith(".test.ts")) out.push(full);
  }
  return out;
}

/** Test files (paths relative to the repository) whose path contains one of `filters` (all when none), sorted. */
export async function testFiles(filters: string[]): Promise<string[]> {
  return (await Promise.all(SEARCH.map((d) => findTests(path.join(root, d)))))
    .flat()
    .map((f) => path.relative(root, f))
    .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
    .sort();
}

/*
 * The quick rule: a test file is quick unless it can start a process. It cannot when nothing
 * it imports, followed through the repository's own modules (relative imports and workspace
 * packages), imports one of these. The test database (test/support/database.ts) and the
 * in-process stack (test/support/stack.ts) reach the embedded database's process, so tests on
 * them are not quick; pure logic and in-process servers without a database are.
 */
const STARTS_PROCESSES = new Set(["node:child_process", "child_process", "playwright-core", "testcontainers"]);

// `import x from "m"`, `export … from "m"`, `import "m"`, `import("m")`; `import type` starts nothing.
const IMPORT = /^\s*(import|export)\s+(type\s+)?(?:[^'"]*?\sfrom\s*)?["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/gm;

function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[3] ?? m[4];
    if (!m[2] && spec) out.push(spec);
  }
  return out;
}

/** The repository module `spec` names from `from`, or undefined (a package outside the repository, a file not found). */
function resolveLocal(spec: string, from: string): string | undefined {
  let target: string | undefined;
  if (spec.startsWith(".")) {
    const base = path.resolve(path.dirname(from), spec);
    target = [base, base.replace(/\.js$/, ".ts"), `${base}.ts`, path.join(base, "index.ts")].find((f) => f.endsWith(".ts") && existsSync(f));
  } else if (spec.startsWith("@meter/")) {
    try {
      target = createRequire(from).resolve(spec);
    } catch {
      return undefined;
    }
  }
  if (!target || target.includes(`${path.sep}node_modules${path.sep}`) || !target.startsWith(root)) return undefined;
  return target;
}

const TEST_DATABASE = path.join(root, "test/support/database.ts");

/** Whether `file` reaches, through its imports, a module that starts processes; the modules in `ignore` are not followed. */
function startsProcesses(file: string, ignore: Set<string>, seen = new Set<string>()): boolean {
  if (ignore.has(file) || seen.has(file)) return false;
  seen.add(file);
  return importsOf(file).some((spec) => {
    if (STARTS_PROCESSES.has(spec)) return true;
    const local = resolveLocal(spec, file);
    return local !== undefined && startsProcesses(local, ignore, seen);
  });
}

/**
 * What a test file (relative to the repository) may start: nothing (quick: `npm run test:quick`
 * runs it), only the test database, or processes of its own (the slowest, scheduled first).
 */
export function kindOf(file: string): "quick" | "database" | "processes" {
  const full = path.join(root, file);
  if (!startsProcesses(full, new Set())) return "quick";
  return startsProcesses(full, new Set([TEST_DATABASE])) ? "processes" : "database";
}
