import { spawn, execFile, type ChildProcess } from "node:child_process";
import { mkdir, rename } from "node:fs/promises";
import { createInterface } from "node:readline";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const toolDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../tools/embedded-db");
const binary = path.join(toolDir, "bin", "embedded-db");

export interface EmbeddedDb {
  url: string;
  stop(): Promise<void>;
}

/**
 * Builds the embedded database (FerretDB over SQLite, see tools/embedded-db) with the local
 * Go toolchain. `go build` is a no-op when nothing changed, so this is cheap after the first
 * run; the output is renamed into place so concurrent starts never see a half-written file.
 */
export async function buildEmbeddedDb(): Promise<string> {
  await mkdir(path.dirname(binary), { recursive: true });
  const tmp = `${binary}.${process.pid}.tmp`;
  try {
    await run("go", ["build", "-o", tmp, "."], { cwd: toolDir, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === "ENOENT") {
      throw new Error("the embedded database needs the Go toolchain (`go`) on PATH; or set MONGODB_URL");
    }
    throw new Error(`building the embedded database failed: ${e.stderr ?? e.message}`);
  }
  await rename(tmp, binary);
  return binary;
}

/**
 * Starts the embedded MongoDB-compatible database keeping its files in `dir`. It stops when
 * stop() is called or when this process exits (it watches its standard input).
 */
export async function startEmbeddedDb(dir: string, opts: { port?: number; flags?: string[] } = {}): Promise<EmbeddedDb> {
  const bin = await buildEmbeddedDb();
  await mkdir(dir, { recursive: true });
  const args = ["-dir", dir, "-listen", `127.0.0.1:${opts.port ?? 0}`, ...(opts.flags ?? [])];
  // Diagnostics: log every command slower than this Go duration (e.g. "500ms") to stderr.
  if (process.env.EMBEDDED_DB_SLOW) args.push("-slow", process.env.EMBEDDED_DB_SLOW);
  const child: ChildProcess = spawn(bin, args, {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (line) => {
      if (line.startsWith("READY ")) resolve(line.slice("READY ".length).trim());
    });
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`embedded database exited early with code ${code}`)));
  });
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.stdin?.end();
        setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
      }),
  };
}
