// One worker of test/run.ts: runs the test files the parent sends, one at a time, with uvu in
// this process, and answers each with its output and totals. Files of one worker share this
// process (and its test database, started on first use) as every file did in the serial runner.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { stopTestDatabase } from "../support/database.ts";
import { root } from "./files.ts";

export type ToWorker = { file: string } | { stop: true };
export interface FileResult {
  file: string;
  /** uvu's report of the file and whatever the tests wrote to stdout. */
  output: string;
  total: number;
  passed: number;
  skipped: number;
  /** Set when the file could not be loaded or uvu stopped in it. */
  error?: string;
  /** CPU seconds the worker's processes (the test database, what the file started) used meanwhile; Linux only. */
  cpu?: number;
}
export type FromWorker = { ready: true } | ({ result: true } & FileResult);

const send = (m: FromWorker) => process.send!(m);

// uvu writes through process.stdout.write; it is caught per file so that files of parallel
// workers are printed whole, not interleaved.
let captured = "";
process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
  captured += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString();
  const done = rest.find((r) => typeof r === "function") as (() => void) | undefined;
  done?.();
  return true;
}) as typeof process.stdout.write;

const g = globalThis as Record<string, unknown>;
g.UVU_DEFER = 1;
const uvu = await import("uvu");

// The machine's clock ticks per second for /proc's CPU times (USER_HZ; 100 on every Linux it runs on).
const TICKS = 100;
const statOf = (pid: string): string[] | undefined => {
  try {
    // The command name (field 2) may hold spaces: the fields after it are split.
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    return text.slice(text.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
};

/**
 * CPU seconds used so far by this worker's process group (the worker leads it: the test database
 * and every process a file starts are in it) and by its reaped children; undefined without /proc.
 * What one file costs the machine, when the two workers share two cores, is this figure, not its time.
 */
function groupCpu(): number | undefined {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((p) => /^\d+$/.test(p));
  } catch {
    return undefined;
  }
  const group = String(process.pid);
  let ticks = 0;
  for (const pid of pids) {
    const f = statOf(pid);
    // After the command: state, ppid, pgrp, …; utime, stime, cutime, cstime are fields 14-17 of the whole line.
    if (!f || f[2] !== group) continue;
    ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  }
  return ticks / TICKS;
}

// The files this worker ran last: a promise one of them left behind that rejects later (an
// operation on a client its file has closed) ends the worker in whichever file runs then.
const ran: string[] = [];
process.on("unhandledRejection", (err) => {
  const [now, before] = [ran.at(-1), ran.at(-2)];
  console.error(`unhandled rejection in the test worker while ${now} ran${before ? ` (the file before it in this worker: ${before})` : ""}:`, err);
  process.exit(1);
});

async function runFile(file: string): Promise<FileResult> {
  ran.push(file);
  if (ran.length > 2) ran.shift();
  captured = "";
  const cpuBefore = groupCpu();
  g.UVU_QUEUE = [[file]];
  g.UVU_INDEX = 0;
  let error: string | undefined;
  try {
    await import(pathToFileURL(path.join(root, file)).href);
    await uvu.exec(false);
  } catch (err) {
    error = err instanceof Error ? (err.stack ?? err.message) : String(err);
  }
  const plain = captured.replace(/\x1b\[[0-9;]*m/g, "");
  // uvu's totals close its report: the last match, whatever the tests printed before.
  const count = (label: string) => Number([...plain.matchAll(new RegExp(`^  ${label}:\\s+(\\d+)$`, "gm"))].at(-1)?.[1] ?? 0);
  const cpuAfter = groupCpu();
  const cpu = cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore;
  return { file, output: captured, total: count("Total"), passed: count("Passed"), skipped: count("Skipped"), error, cpu };
}

process.on("message", async (m: ToWorker) => {
  if ("stop" in m) {
    await stopTestDatabase();
    process.exit(0);
  }
  send({ result: true, ...(await runFile(m.file)) });
});
// The parent is gone (interrupted, or it gave up on this worker): nothing is left to report to.
process.on("disconnect", () => process.exit(1));
send({ ready: true });
