import { spawn, execFile, type ChildProcess } from "node:child_process";
import { constants, existsSync } from "node:fs";
import { chmod, cp, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
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

/** Receives progress lines while a slow step runs (a first build takes minutes). */
export type Progress = (message: string) => void;

/** How long a build may take before saying so, then how often to say it is still going. */
const QUIET_MS = 3_000;
const HEARTBEAT_MS = 15_000;

/** The FerretDB source file the build changes, and the line it changes in it (twice). */
const PATCHED_FILE = "internal/backends/sqlite/collection.go";
const ID_ONLY_PUSHDOWN = "if params.Filter.Len() == 1 {";

/**
 * FerretDB v1 over SQLite reads a document by its primary key only when the filter is exactly
 * `{_id: <value>}`; a filter with any other condition beside `_id` (a guarded update such as
 * `{_id, jobs: {$ne: job}}`, a version compare-and-set) reads the whole table and grows with
 * the collection (12 ms at 1,000 documents). Its handlers filter every document they read
 * again in Go, so narrowing the read by `_id` whatever else the filter holds is always
 * correct. The build uses a copy of the FerretDB module with that one condition changed
 * (through an alternate go.mod with a `replace`), leaving go.mod and the module cache as they
 * are; a FerretDB upgrade that changes the line fails here, loudly. Returns the go.mod to use.
 */
async function patchedModFile(): Promise<string> {
  const { stdout } = await run("go", ["mod", "download", "-json", "github.com/FerretDB/FerretDB"], { cwd: toolDir });
  const mod = JSON.parse(stdout) as { Dir: string; Version: string };
  const bin = path.join(toolDir, "bin");
  const copy = path.join(bin, `ferretdb-${mod.Version}-patched`);
  if (!existsSync(copy)) {
    const original = await readFile(path.join(mod.Dir, PATCHED_FILE), "utf8");
    if (original.split(ID_ONLY_PUSHDOWN).length - 1 !== 2) {
      throw new Error(`embedded database: ${PATCHED_FILE} of FerretDB ${mod.Version} changed; review the _id pushdown patch`);
    }
    const tmp = `${copy}.${process.pid}.tmp`;
    await rm(tmp, { recursive: true, force: true });
    // The module cache is read-only: the copy's files are made writable before one is changed.
    await cp(mod.Dir, tmp, { recursive: true, mode: constants.COPYFILE_FICLONE });
    await chmod(path.join(tmp, PATCHED_FILE), 0o644);
    await writeFile(path.join(tmp, PATCHED_FILE), original.replaceAll(ID_ONLY_PUSHDOWN, "if params.Filter.Len() >= 1 {"));
    await rename(tmp, copy).catch(async (err) => {
      if (!existsSync(copy)) throw err; // a concurrent build made it first
      await rm(tmp, { recursive: true, force: true });
    });
  }
  const modFile = path.join(bin, "patched.mod");
  const goMod = await readFile(path.join(toolDir, "go.mod"), "utf8");
  await writeFile(modFile, `${goMod}\nreplace github.com/FerretDB/FerretDB => ${copy}\n`);
  await cp(path.join(toolDir, "go.sum"), path.join(bin, "patched.sum"));
  return modFile;
}

/**
 * Builds the embedded database (FerretDB over SQLite, see tools/embedded-db) with the local
 * Go toolchain. `go build` is a no-op when nothing changed, so this is cheap after the first
 * run; the output is renamed into place so concurrent starts never see a half-written file.
 * The first build downloads and compiles FerretDB (about two minutes on a fresh machine, and
 * silent otherwise): `progress` hears about it when it lasts.
 */
export async function buildEmbeddedDb(progress?: Progress): Promise<string> {
  await mkdir(path.dirname(binary), { recursive: true });
  const tmp = `${binary}.${process.pid}.tmp`;
  const started = Date.now();
  let heartbeat: NodeJS.Timeout | undefined;
  const quiet = setTimeout(() => {
    progress?.(
      "building the embedded database with Go (first run only: downloads and compiles FerretDB, " +
        "about 2 minutes on a fresh machine; later starts take a second)",
    );
    heartbeat = setInterval(
      () => progress?.(`still building the embedded database (${Math.round((Date.now() - started) / 1000)} s so far)`),
      HEARTBEAT_MS,
    );
  }, QUIET_MS);
  try {
    const modFile = await patchedModFile();
    await run("go", ["build", "-modfile", modFile, "-o", tmp, "."], { cwd: toolDir, maxBuffer: 16 * 1024 * 1024 });
    if (heartbeat) progress?.(`embedded database built in ${Math.round((Date.now() - started) / 1000)} s`);
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === "ENOENT") {
      throw new Error("the embedded database needs the Go toolchain (`go`) on PATH; or set MONGODB_URL");
    }
    throw new Error(`building the embedded database failed: ${e.stderr ?? e.message}`);
  } finally {
    clearTimeout(quiet);
    clearInterval(heartbeat);
  }
  await rename(tmp, binary);
  return binary;
}

/**
 * Starts the embedded MongoDB-compatible database keeping its files in `dir`. It stops when
 * stop() is called or when this process exits (it watches its standard input).
 */
export async function startEmbeddedDb(
  dir: string,
  opts: { port?: number; flags?: string[]; progress?: Progress } = {},
): Promise<EmbeddedDb> {
  const bin = await buildEmbeddedDb(opts.progress);
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
