// Runs the repository's *.test.ts files with uvu in a few worker processes, then prints the
// plain summary line "N passed, N failed" (non-zero exit when a test failed or none ran).
// Arguments filter files by substring; --quick keeps the files that start no process:
//   npm test -- tenancy gateway/routes
//   npm run test:quick -- webhooks
// TEST_WORKERS sets the number of workers (1 runs the files one after another);
// TEST_FILE_TIMEOUT_MS is how long one file may run before it is reported as hung.
import { fork, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { kindOf, root, testFiles } from "./runner/files.ts";
import type { FileResult, FromWorker, ToWorker } from "./runner/worker.ts";

const args = process.argv.slice(2);
const quick = args.includes("--quick");
const filters = args.filter((a) => a !== "--quick");
const FILE_TIMEOUT_MS = Number(process.env.TEST_FILE_TIMEOUT_MS ?? 20 * 60_000);
const RUN_TIMEOUT_MS = Number(process.env.TEST_WATCHDOG_MS ?? 45 * 60_000);
// One worker per core: most files start processes of their own (a stack, a database), and more
// workers than cores made timing-bound waits (deliveries, relays) miss on a 2-core machine.
const WORKERS = Number(process.env.TEST_WORKERS ?? Math.min(4, os.availableParallelism()));
if (!Number.isInteger(WORKERS) || WORKERS < 1) {
  console.error(`TEST_WORKERS must be a whole number of at least 1, not ${process.env.TEST_WORKERS}`);
  process.exit(1);
}
const WORKER = path.join(path.dirname(fileURLToPath(import.meta.url)), "runner", "worker.ts");

// Each file's last duration, kept between runs (git-ignored, outside node_modules so that npm ci
// keeps it) to start the longest files first. A clone that has not run the tests yet starts
// from test/runner/durations.json (a full run's times, committed: copy .cache/test-times.json
// there when files were added or their times moved), so that a fresh machine's run does not
// end with one long file running alone.
const TIMES = path.join(root, ".cache", "test-times.json");
const BASELINE = path.join(root, "test", "runner", "durations.json");
const readTimes = (file: string): Record<string, number> => {
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch {
    return {};
  }
};
const times: Record<string, number> = { ...readTimes(BASELINE), ...readTimes(TIMES) };

const kinds = new Map((await testFiles(filters)).map((f) => [f, kindOf(f)]));
const files = [...kinds.keys()].filter((f) => !quick || kinds.get(f) === "quick");
if (files.length === 0) {
  console.error(`no ${quick ? "quick " : ""}test files match ${filters.join(" ")}`);
  process.exit(1);
}
const GUESS_MS = { processes: 120_000, database: 20_000, quick: 1_000 };
const queue = files.toSorted((a, b) => (times[b] ?? GUESS_MS[kinds.get(b)!]) - (times[a] ?? GUESS_MS[kinds.get(a)!]));

const started = Date.now();
const results: FileResult[] = [];
const failures: string[] = [];

function report(r: FileResult, ms: number, extra: string): void {
  results.push(r);
  // The file's own totals are summed at the end; its timing is more useful here.
  const body = r.output.replace(/\n\s*Total:[\s\S]*$/, "").trimEnd();
  let text = `${body || r.file}\n  (${(ms / 1000).toFixed(1)} s)\n`;
  if (extra.trim()) text += `${extra.trimEnd()}\n`;
  if (r.error) text += `  ${r.file}: ${r.error}\n`;
  process.stdout.write(`${text}\n`);
  if (r.error || r.passed < r.total) failures.push(`${r.file}: ${r.error ? r.error.split("\n")[0] : `${r.total - r.passed} of ${r.total} failed`}`);
  times[r.file] = ms;
}

interface Worker {
  child: ChildProcess;
  file?: string;
  since: number;
  hung?: boolean;
  ready?: boolean;
  /** What the worker and the processes it started wrote outside uvu's report, for the file running. */
  stray: string;
}
const workers = new Set<Worker>();

// Each worker leads its own process group, so that a hung file is ended with what it started.
const killGroup = (w: Worker) => {
  try {
    process.kill(-w.child.pid!, "SIGKILL");
  } catch {
    // already gone
  }
};

function next(w: Worker): void {
  w.file = queue.shift();
  w.since = Date.now();
  w.child.send((w.file ? { file: w.file } : { stop: true }) satisfies ToWorker);
}

function startWorker(): Promise<void> {
  return new Promise((resolve) => {
    const child = fork(WORKER, [], {
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      detached: true,
      cwd: root,
    });
    const w: Worker = { child, since: Date.now(), stray: "" };
    workers.add(w);
    child.stdout!.on("data", (d) => (w.stray += d));
    child.stderr!.on("data", (d) => (w.stray += d));
    child.on("message", (m: FromWorker) => {
      if ("ready" in m) {
        w.ready = true;
        next(w);
      } else {
        const { result: _, ...r } = m;
        report(r, Date.now() - w.since, w.stray);
        w.stray = "";
        next(w);
      }
    });
    child.on("exit", (code, signal) => {
      workers.delete(w);
      if (w.file) {
        const ms = Date.now() - w.since;
        const error = w.hung
          ? `hung: no result after ${Math.round(FILE_TIMEOUT_MS / 1000)} s (TEST_FILE_TIMEOUT_MS); its worker was ended`
          : `its worker exited (${signal ?? `code ${code}`}) before the file finished`;
        report({ file: w.file, output: "", total: 0, passed: 0, skipped: 0, error }, ms, w.stray);
      } else if (w.stray.trim()) process.stdout.write(`${w.stray.trimEnd()}\n`);
      // A file that killed its worker must not take the rest of the queue with it; a worker
      // that cannot start at all is not started again.
      if (queue.length > 0 && w.ready) startWorker().then(resolve);
      else resolve();
    });
  });
}

// A hung file is named, its worker ended, and the rest goes on in a new worker.
const watchdog = setInterval(() => {
  for (const w of workers) {
    if (w.file && !w.hung && Date.now() - w.since > FILE_TIMEOUT_MS) {
      w.hung = true;
      killGroup(w);
    }
  }
  if (Date.now() - started > RUN_TIMEOUT_MS) {
    console.error(`\ntest run exceeded ${RUN_TIMEOUT_MS} ms; aborting. Running: ${[...workers].map((w) => w.file).join(", ")}`);
    workers.forEach(killGroup);
    process.exit(1);
  }
}, 1_000);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    workers.forEach(killGroup);
    process.exit(130);
  });
}

await Promise.all(Array.from({ length: Math.min(WORKERS, queue.length) }, startWorker));
clearInterval(watchdog);
for (const file of queue) report({ file, output: "", total: 0, passed: 0, skipped: 0, error: "not run: no test worker could start" }, 0, "");

try {
  for (const file of Object.keys(times)) if (!existsSync(path.join(root, file))) delete times[file];
  mkdirSync(path.dirname(TIMES), { recursive: true });
  writeFileSync(TIMES, JSON.stringify(times, null, 1));
} catch {
  // the order is only a speed-up
}

const sum = (k: "total" | "passed" | "skipped") => results.reduce((n, r) => n + r[k], 0);
// A file that could not run counts as one failure at least.
const total = results.reduce((n, r) => n + (r.error ? Math.max(r.total, r.passed + 1) : r.total), 0);
const passed = sum("passed");
if (failures.length) console.log(`Failed files:\n${failures.map((f) => `  ${f}`).join("\n")}\n`);
console.log(`  Total:     ${sum("total")}\n  Passed:    ${passed}\n  Skipped:   ${sum("skipped")}`);
const used = Math.min(WORKERS, files.length);
console.log(`  Files:     ${results.length} in ${Math.round((Date.now() - started) / 1000)} s (${used} worker${used === 1 ? "" : "s"})\n`);
console.log(`${passed} passed, ${total - passed} failed`);
process.exit(total - passed > 0 || total === 0 ? 1 : 0);
