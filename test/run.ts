// Runs the repository's *.test.ts files with uvu in a few worker processes, then prints the
// plain summary line "N passed, N failed" (non-zero exit when a test failed or none ran).
// Arguments filter files by substring; --quick keeps the files that start no process:
//   npm test -- tenancy gateway/routes
//   npm run test:quick -- webhooks
// TEST_WORKERS sets the number of workers (1 runs the files one after another), TEST_WAITING_WORKERS
// the extra ones for files that mostly wait (below);
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

// Each file's last duration and CPU seconds, kept between runs (git-ignored, outside node_modules
// so that npm ci keeps it) to start the longest files first and to know which files mostly wait.
// A clone that has not run the tests yet starts from test/runner/durations.json (a full run's
// figures, committed: copy .cache/test-times.json there when files were added or their times
// moved), so that a fresh machine's run does not end with one long file running alone.
const TIMES = path.join(root, ".cache", "test-times.json");
const BASELINE = path.join(root, "test", "runner", "durations.json");
interface Timing {
  ms: number;
  /** CPU milliseconds of the worker's processes while the file ran (test/runner/worker.ts). */
  cpu?: number;
}
const readTimes = (file: string): Record<string, Timing> => {
  try {
    const raw = JSON.parse(readFileSync(file, "utf8")) as Record<string, Timing | number>;
    return Object.fromEntries(Object.entries(raw).map(([f, t]) => [f, typeof t === "number" ? { ms: t } : t]));
  } catch {
    return {};
  }
};
const times: Record<string, Timing> = { ...readTimes(BASELINE), ...readTimes(TIMES) };

const kinds = new Map((await testFiles(filters)).map((f) => [f, kindOf(f)]));
const files = [...kinds.keys()].filter((f) => !quick || kinds.get(f) === "quick");
if (files.length === 0) {
  console.error(`no ${quick ? "quick " : ""}test files match ${filters.join(" ")}`);
  process.exit(1);
}
const GUESS_MS = { processes: 120_000, database: 20_000, quick: 1_000 };
const msOf = (f: string) => times[f]?.ms ?? GUESS_MS[kinds.get(f)!];
const queue = files.toSorted((a, b) => msOf(b) - msOf(a));

/*
 * Most files keep a worker's core busy; some mostly wait (for deliveries' retries, a minute's
 * turn, replicas' leases) and use half of it or less. One more worker than cores takes only
 * those, so that their waits overlap the other files' work instead of holding a core idle, while
 * no more files compute at once than there are cores. TEST_WAITING_WORKERS sets how many (0: none).
 */
const WAITING_SHARE = 0.5;
const WAITING_MIN_MS = 5_000;
const waits = (f: string) => {
  const t = times[f];
  return t?.cpu !== undefined && t.ms >= WAITING_MIN_MS && t.cpu / t.ms <= WAITING_SHARE;
};
const WAITING_WORKERS = Number(process.env.TEST_WAITING_WORKERS ?? (WORKERS > 1 ? 1 : 0));
if (!Number.isInteger(WAITING_WORKERS) || WAITING_WORKERS < 0) {
  console.error(`TEST_WAITING_WORKERS must be a whole number, not ${process.env.TEST_WAITING_WORKERS}`);
  process.exit(1);
}

const started = Date.now();
const results: FileResult[] = [];
const failures: string[] = [];

function report(r: FileResult, ms: number, extra: string): void {
  results.push(r);
  // The file's own totals are summed at the end; its timing is more useful here.
  const body = r.output.replace(/\n\s*Total:[\s\S]*$/, "").trimEnd();
  const cpu = r.cpu === undefined ? "" : `, ${r.cpu.toFixed(1)} s of CPU`;
  let text = `${body || r.file}\n  (${(ms / 1000).toFixed(1)} s${cpu})\n`;
  if (extra.trim()) text += `${extra.trimEnd()}\n`;
  if (r.error) text += `  ${r.file}: ${r.error}\n`;
  process.stdout.write(`${text}\n`);
  if (r.error || r.passed < r.total) failures.push(`${r.file}: ${r.error ? r.error.split("\n")[0] : `${r.total - r.passed} of ${r.total} failed`}`);
  times[r.file] = { ms, ...(r.cpu === undefined ? {} : { cpu: Math.round(r.cpu * 1000) }) };
}

interface Worker {
  child: ChildProcess;
  /** Takes only files that mostly wait (see WAITING_SHARE). */
  waiting: boolean;
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
  const at = w.waiting ? queue.findIndex(waits) : 0;
  w.file = at < 0 ? undefined : queue.splice(at, 1)[0];
  w.since = Date.now();
  w.child.send((w.file ? { file: w.file } : { stop: true }) satisfies ToWorker);
}

function startWorker(waiting = false): Promise<void> {
  return new Promise((resolve) => {
    const child = fork(WORKER, [], {
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      detached: true,
      cwd: root,
    });
    const w: Worker = { child, waiting, since: Date.now(), stray: "" };
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
      if (queue.length > 0 && w.ready && (!w.waiting || queue.some(waits))) startWorker(w.waiting).then(resolve);
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

const waitingWorkers = Math.min(WAITING_WORKERS, queue.filter(waits).length);
await Promise.all([
  ...Array.from({ length: Math.min(WORKERS, queue.length) }, () => startWorker()),
  ...Array.from({ length: waitingWorkers }, () => startWorker(true)),
]);
clearInterval(watchdog);
for (const file of queue) report({ file, output: "", total: 0, passed: 0, skipped: 0, error: "not run: no test worker could start" }, 0, "");

try {
  for (const file of Object.keys(times)) if (!existsSync(path.join(root, file))) delete times[file];
  mkdirSync(path.dirname(TIMES), { recursive: true });
  // One line a file, so that a refreshed baseline's diff reads file by file.
  const lines = Object.entries(times).map(([f, t]) => `  ${JSON.stringify(f)}: ${JSON.stringify(t)}`);
  writeFileSync(TIMES, `{\n${lines.join(",\n")}\n}\n`);
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
const lanes = `${used} worker${used === 1 ? "" : "s"}${waitingWorkers ? ` and ${waitingWorkers} for files that mostly wait` : ""}`;
console.log(`  Files:     ${results.length} in ${Math.round((Date.now() - started) / 1000)} s (${lanes})`);
// The run is bound by the machine's cores: the files that cost the most CPU are where it can get shorter.
const costly = results.filter((r) => r.cpu !== undefined).toSorted((a, b) => b.cpu! - a.cpu!);
if (costly.length) {
  const cpuTotal = costly.reduce((n, r) => n + r.cpu!, 0);
  const top = costly.slice(0, 5).map((r) => `${r.file} ${Math.round(r.cpu!)} s`);
  console.log(`  CPU:       ${Math.round(cpuTotal)} s in all; most: ${top.join(", ")}`);
}
console.log("");
console.log(`${passed} passed, ${total - passed} failed`);
process.exit(total - passed > 0 || total === 0 ? 1 : 0);
