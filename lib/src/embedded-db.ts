import { spawn, execFile, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { constants, existsSync } from "node:fs";
import { chmod, cp, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { Logger } from "./logger.ts";
import { supervise } from "./supervise.ts";

const run = promisify(execFile);
const toolDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../tools/embedded-db");
const binary = path.join(toolDir, "bin", "embedded-db");

export interface EmbeddedDb {
  url: string;
  /** The database process (a new one after each restart under supervision; undefined while it restarts). */
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

/** Receives progress lines while a slow step runs (a first build takes minutes). */
export type Progress = (message: string) => void;

/** How long a build may take before saying so, then how often to say it is still going. */
const QUIET_MS = 3_000;
const HEARTBEAT_MS = 15_000;

/** One change to a FerretDB source file: `find` must occur exactly `count` times. */
interface SourcePatch {
  file: string;
  find: string;
  replace: string;
  count: number;
}

const SQLITE_COLLECTION = "internal/backends/sqlite/collection.go";
const ID_SWITCH = (pushdownFlag: string) =>
  "\t\tswitch v.(type) {\n\t\tcase string, types.ObjectID:\n" +
  pushdownFlag +
  "\t\t\twhereClause = fmt.Sprintf(` WHERE %s = ?`, metadata.IDColumn)\n" +
  "\t\t\targs = []any{string(must.NotFail(sjson.MarshalSingleValue(v)))}\n\t\t}\n";

/** The files of FerretDB's sjson package (the stored documents' encoding) that decode JSON, with their number of Decoders. */
const SJSON_DECODING: [string, number][] = [
  ...["array", "binary", "bool", "datetime", "document", "double", "int32", "int64", "object_id", "regex", "string", "timestamp"].map((f): [string, number] => [f, 1]),
  ["sjson", 2],
];

/**
 * What the embedded database changes in FerretDB v1 (over SQLite), each for a cost or a fault
 * seen in this service's workload. The build compiles a copy of the FerretDB module with these
 * changes (through an alternate go.mod with a `replace`), leaving go.mod and the module cache
 * as they are; a FerretDB upgrade that moves any of these lines fails the build, loudly.
 */
const PATCHES: SourcePatch[] = [
  // FerretDB reads by primary key only when the filter is exactly `{_id: <value>}`: a guarded
  // update (`{_id, jobs: {$ne: job}}`) or a version compare-and-set read the whole table (12 ms
  // at 1,000 documents, growing). Its handlers filter every document they read again in Go, so
  // narrowing by `_id` whatever else the filter holds is always correct.
  { file: SQLITE_COLLECTION, find: "if params.Filter.Len() == 1 {", replace: "if params.Filter.Len() >= 1 {", count: 2 },
  // ... and `{_id: {$in: [...]}}` read the whole table too: reading 100 users took 100 commands.
  // idCondition (patches/id_condition.go.in) narrows both forms.
  {
    file: SQLITE_COLLECTION,
    find: ID_SWITCH(""),
    replace: "\t\tif w, a, ok := idCondition(v); ok {\n\t\t\twhereClause, args = w, a\n\t\t}\n",
    count: 1,
  },
  {
    file: SQLITE_COLLECTION,
    find: ID_SWITCH("\t\t\tfilterPushdown = true\n"),
    replace: "\t\tif w, a, ok := idCondition(v); ok {\n\t\t\tfilterPushdown, whereClause, args = true, w, a\n\t\t}\n",
    count: 1,
  },
  // A find of an `_id` range of strings sorted by `_id` (a listing's page: users of a product
  // whose external id starts with a prefix, after a cursor) read and sorted the whole table to
  // keep its first rows. The range is now read from the `_id` order index (maintain.go) in
  // `_id` order and the limit applied by SQLite: a page costs its own rows. The handler still
  // filters and sorts what it reads, which changes nothing for a range that was read exactly.
  {
    file: "internal/handler/msg_find.go",
    find: "\t\tqp.Limit = params.Limit\n\t}\n",
    replace:
      "\t\tqp.Limit = params.Limit\n\t}\n\n\tif !h.DisablePushdown && params.Skip == 0 && types.IDRangeSorted(params.Filter, params.Sort) {\n\t\tqp.Sort, qp.Limit = params.Sort, params.Limit\n\t}\n",
    count: 1,
  },
  {
    file: "internal/backends/sqlite/query.go",
    find: '\tv := must.NotFail(sort.Get("$natural"))\n',
    replace: '\tif o, ok := idOrderBy(sort); ok {\n\t\treturn o\n\t}\n\n\tv := must.NotFail(sort.Get("$natural"))\n',
    count: 1,
  },
  // The backend contract's check of a sort named `$natural` only.
  { file: "internal/backends/collection.go", find: 'params.Sort.Map()["$natural"].(int64)', replace: "params.Sort.Map()[params.Sort.Keys()[0]].(int64)", count: 2 },
  // An update command kept every statement's read open until the whole command ended (a
  // `defer` in the statements' loop): each holds one of the 100 pooled SQLite connections, so
  // a command of 100 statements waited forever for a connection, and shorter ones slowed down
  // as they opened new ones. Each statement's read now closes when the statement is done.
  { file: "internal/handler/msg_update.go", find: "\t\tdefer closer.Close()\n", replace: "", count: 1 },
  {
    file: "internal/handler/msg_update.go",
    find: '\t\tresult, err := common.UpdateDocument(ctx, c, "update", iter, &u)\n',
    replace: '\t\tresult, err := common.UpdateDocument(ctx, c, "update", iter, &u)\n\t\tcloser.Close()\n',
    count: 1,
  },
  // An update command of many statements made a commit of each (its page writes to the log) and
  // read each document on whichever pooled connection was free, whose page cache the other
  // connections' commits had reset: 0.45 ms a statement of a counters' round. Its statements now
  // run in one transaction on one connection, each under a savepoint (patches/batch.go.in); a
  // command with an update of many documents (`multi`) keeps the old way, where each statement's
  // read is not changed by its own writes.
  {
    file: "internal/handler/msg_update.go",
    find: '\t"github.com/FerretDB/FerretDB/internal/util/iterator"\n',
    replace: '\t"github.com/FerretDB/FerretDB/internal/util/fsql"\n\t"github.com/FerretDB/FerretDB/internal/util/iterator"\n',
    count: 1,
  },
  {
    file: "internal/handler/msg_update.go",
    find: "\tfor _, u := range params.Updates {\n\t\tc, err := db.Collection(params.Collection)\n",
    replace:
      "\tbatched := len(params.Updates) > 1\n\tfor _, u := range params.Updates {\n\t\tbatched = batched && !u.Multi\n\t}\n\n" +
      "\tvar batch *fsql.Batch\n\tif batched {\n\t\tctx, batch = fsql.WithBatch(ctx)\n\t\tdefer batch.End()\n\t}\n\n" +
      "\tfor _, u := range params.Updates {\n\t\tc, err := db.Collection(params.Collection)\n",
    count: 1,
  },
  {
    file: "internal/handler/msg_update.go",
    find: "\treturn matched, modified, &upserted, nil\n}\n",
    replace: "\tif err := batch.End(); err != nil {\n\t\treturn 0, 0, nil, lazyerrors.Error(err)\n\t}\n\n\treturn matched, modified, &upserted, nil\n}\n",
    count: 1,
  },
  {
    file: "internal/util/fsql/db.go",
    find: "func (db *DB) InTransaction(ctx context.Context, f func(*Tx) error) (err error) {\n",
    replace: "func (db *DB) InTransaction(ctx context.Context, f func(*Tx) error) (err error) {\n\tif b := batchOf(ctx); b != nil {\n\t\treturn b.run(ctx, db, f)\n\t}\n\n",
    count: 1,
  },
  // A new collection's table got the indexes its lookups by `_id` use only at the maintainer's
  // next round (maintain.go), up to a second later: until then every lookup read the whole table
  // (a new counters table's first rounds of 100 updates took 110-160 ms instead of 15-30). The
  // table now gets them when it is made (patches/id_indexes.go.in).
  {
    file: "internal/backends/sqlite/metadata/registry.go",
    find: "\t\tUnique: true,\n\t}})\n\tif err != nil {\n\t\t_, _ = r.collectionDrop(ctx, dbName, collectionName)\n\t\treturn false, lazyerrors.Error(err)\n\t}\n",
    replace:
      "\t\tUnique: true,\n\t}})\n\tif err != nil {\n\t\t_, _ = r.collectionDrop(ctx, dbName, collectionName)\n\t\treturn false, lazyerrors.Error(err)\n\t}\n\n" +
      "\tif err = idIndexes(ctx, db, tableName); err != nil {\n\t\t_, _ = r.collectionDrop(ctx, dbName, collectionName)\n\t\treturn false, lazyerrors.Error(err)\n\t}\n",
    count: 1,
  },
  // Leak tracking for FerretDB's own development: every iterator recorded its creation stack
  // in a pprof profile and got a finalizer that crashes the process if it was never closed.
  // That was a quarter of the CPU time of a read by `_id`; the embedded database does without.
  { file: "internal/util/resource/resource.go", find: "func Track(obj any, token *Token) {\n", replace: "func Track(obj any, token *Token) {\n\treturn\n", count: 1 },
  { file: "internal/util/resource/resource.go", find: "func Untrack(obj any, token *Token) {\n", replace: "func Untrack(obj any, token *Token) {\n\treturn\n", count: 1 },
  // FerretDB ran every statement as text, which SQLite parsed and planned again each time (7-10%
  // of the CPU time of a read or an update by _id). Finds of one _id, inserts and updates now
  // stay prepared on the connections that ran them (patches/prepared.go.in).
  { file: "internal/util/fsql/db.go", find: "\tBatchSize int\n}\n", replace: "\tBatchSize int\n\n\tstatements preparedStatements\n}\n", count: 1 },
  {
    file: SQLITE_COLLECTION,
    find: "\trows, err := db.QueryContext(ctx, q, args...)\n\tif err != nil {\n\t\treturn nil, lazyerrors.Error(err)\n\t}\n\n\treturn &backends.QueryResult{\n",
    replace: "\trows, err := db.QueryPrepared(ctx, q, args...)\n\tif err != nil {\n\t\treturn nil, lazyerrors.Error(err)\n\t}\n\n\treturn &backends.QueryResult{\n",
    count: 1,
  },
  { file: SQLITE_COLLECTION, find: "tx.ExecContext(ctx, q, args...)", replace: "tx.ExecPrepared(ctx, db, q, args...)", count: 1 },
  { file: SQLITE_COLLECTION, find: "tx.ExecContext(ctx, q, string(b), arg)", replace: "tx.ExecPrepared(ctx, db, q, string(b), arg)", count: 1 },
  // Each statement formatted its text and arguments twice for a debug log that is off (3% of a
  // read's CPU time); they are formatted only when that level is on.
  ...(["db", "tx"] as const).flatMap((x) =>
    [">>>", "<<<"].map((dir) => ({
      file: `internal/util/fsql/${x}.go`,
      find: `\t${x}.l.With(fields...).DebugContext(ctx, fmt.Sprintf("${dir} %s", query))\n`,
      replace: `\tif ${x}.l.Enabled(ctx, slog.LevelDebug) {\n\t\t${x}.l.With(fields...).DebugContext(ctx, fmt.Sprintf("${dir} %s", query))\n\t}\n`,
      count: 3,
    })),
  ),
  // Stored documents are JSON with a schema (FerretDB's sjson), decoded by encoding/json once
  // per nesting level and per value, with a new Decoder each: 37% of the CPU time of an update
  // by `_id`. Each value is decoded with github.com/goccy/go-json now (patches/sjson_decoder.go.in);
  // encoding stays with encoding/json, so what is stored (and every `_id` compared) is unchanged.
  ...SJSON_DECODING.map(([f, n]) => ({ file: `internal/handler/sjson/${f}.go`, find: "json.NewDecoder(", replace: "newValueDecoder(", count: n })),
  { file: "internal/handler/sjson/sjson.go", find: "dec *json.Decoder", replace: "dec *valueDecoder", count: 1 },
  // A read or delete of an `_id` list filters each document it finds against the whole list with
  // FerretDB's generic comparison: N x N of them, a quarter of the CPU of a read or delete of
  // 1,000 ids (bench:embedded-db). A list of strings and ObjectIDs is now looked up in a set built
  // once per list (patches/in_scalars.go.in).
  {
    file: "internal/handler/common/filter.go",
    find: '\t\t\t\t\t"$in needs an array",\n\t\t\t\t\texprKey,\n\t\t\t\t)\n\t\t\t}\n\n\t\t\tvar found bool\n',
    replace:
      '\t\t\t\t\t"$in needs an array",\n\t\t\t\t\texprKey,\n\t\t\t\t)\n\t\t\t}\n\n' +
      "\t\t\tif found, ok := inScalars(fieldValue, arr); ok {\n\t\t\t\tif !found {\n\t\t\t\t\treturn false, nil\n\t\t\t\t}\n\t\t\t\tbreak\n\t\t\t}\n\n" +
      "\t\t\tvar found bool\n",
    count: 1,
  },
  // A find decoded every stored document whole, then projected it: reading 1,000 counters for
  // three fields spent 58% of its time decoding the rest (bench:embedded-db, "one answer"). A
  // find whose projection includes top-level fields, and whose filter and sort name only such
  // fields, now decodes just those and `_id` (patches/projected_fields.go.in: which finds;
  // query_fields.go.in and sjson_fields.go.in: the decoding). Every other command (updates,
  // aggregations, finds without such a projection) decodes whole documents as before.
  { file: "internal/backends/collection.go", find: "\tOnlyRecordIDs bool\n\tComment       string\n}\n", replace: "\tOnlyRecordIDs bool\n\tComment       string\n\tFields        []string\n}\n", count: 1 },
  { file: "internal/backends/sqlite/query_iterator.go", find: "\tonlyRecordIDs bool\n}\n", replace: "\tonlyRecordIDs bool\n\tfields        []string\n}\n", count: 1 },
  { file: "internal/backends/sqlite/query_iterator.go", find: "sjson.Unmarshal(b)", replace: "sjson.UnmarshalFields(b, iter.fields)", count: 1 },
  { file: "internal/backends/sqlite/collection.go", find: "Iter: newQueryIterator(ctx, rows, params.OnlyRecordIDs),", replace: "Iter: withFields(newQueryIterator(ctx, rows, params.OnlyRecordIDs), params.Fields),", count: 1 },
  {
    file: "internal/handler/msg_find.go",
    find: '\th.L.DebugContext(ctx, fmt.Sprintf("Converted %+v for %+v to %+v.", params, cInfo, qp))\n',
    replace: '\tqp.Fields = projectedFields(params)\n\n\th.L.DebugContext(ctx, fmt.Sprintf("Converted %+v for %+v to %+v.", params, cInfo, qp))\n',
    count: 1,
  },
];

/** Source files added to the copy: path in the FerretDB module <- file in tools/embedded-db/patches. */
const ADDED_FILES: Record<string, string> = {
  "internal/backends/sqlite/id_condition.go": "id_condition.go.in",
  "internal/types/id_range.go": "id_range.go.in",
  "internal/util/fsql/prepared.go": "prepared.go.in",
  "internal/util/fsql/batch.go": "batch.go.in",
  "internal/backends/sqlite/metadata/id_indexes.go": "id_indexes.go.in",
  "internal/handler/sjson/value_decoder.go": "sjson_decoder.go.in",
  "internal/handler/common/in_scalars.go": "in_scalars.go.in",
  "internal/handler/sjson/unmarshal_fields.go": "sjson_fields.go.in",
  "internal/backends/sqlite/query_fields.go": "query_fields.go.in",
  "internal/handler/projected_fields.go": "projected_fields.go.in",
};

/** Patched copies untouched this long are no longer being built from (a build takes minutes). */
const OLD_COPY_MS = 60 * 60_000;

/**
 * Removes the copies of earlier patches (about 3.4 MB each), which a checkout whose patches
 * change would otherwise keep forever. A copy made within the hour stays: a build of another
 * checkout or process may still be reading it.
 */
export async function removeOldCopies(bin: string, keep: string): Promise<void> {
  for (const name of await readdir(bin)) {
    const dir = path.join(bin, name);
    if (!name.startsWith("ferretdb-") || dir === keep) continue;
    const modified = await stat(dir).then((s) => s.mtimeMs, () => Date.now());
    if (Date.now() - modified > OLD_COPY_MS) await rm(dir, { recursive: true, force: true });
  }
}

/** Returns the go.mod that builds against the patched copy of FerretDB, making the copy first if needed. */
async function patchedModFile(): Promise<string> {
  const { stdout } = await run("go", ["mod", "download", "-json", "github.com/FerretDB/FerretDB"], { cwd: toolDir });
  const mod = JSON.parse(stdout) as { Dir: string; Version: string };
  const bin = path.join(toolDir, "bin");
  const added = await Promise.all(
    Object.entries(ADDED_FILES).map(async ([to, from]) => [to, await readFile(path.join(toolDir, "patches", from), "utf8")] as const),
  );
  // The copy is named by what was changed in it, so that a change of the patches makes a new one.
  const digest = createHash("sha256").update(JSON.stringify([PATCHES, added])).digest("hex").slice(0, 12);
  const copy = path.join(bin, `ferretdb-${mod.Version}-${digest}`);
  if (!existsSync(copy)) {
    const tmp = `${copy}.${process.pid}.tmp`;
    await rm(tmp, { recursive: true, force: true });
    // The module cache is read-only: the copy's files are made writable before one is changed.
    await cp(mod.Dir, tmp, { recursive: true, mode: constants.COPYFILE_FICLONE });
    for (const file of new Set(PATCHES.map((p) => p.file))) {
      let text = await readFile(path.join(tmp, file), "utf8");
      for (const p of PATCHES.filter((q) => q.file === file)) {
        if (text.split(p.find).length - 1 !== p.count) {
          await rm(tmp, { recursive: true, force: true });
          throw new Error(`embedded database: ${file} of FerretDB ${mod.Version} changed; review the patch of ${JSON.stringify(p.find)}`);
        }
        text = text.replaceAll(p.find, p.replace);
      }
      await chmod(path.join(tmp, file), 0o644);
      await writeFile(path.join(tmp, file), text);
    }
    for (const [to, text] of added) {
      await chmod(path.dirname(path.join(tmp, to)), 0o755);
      await writeFile(path.join(tmp, to), text);
    }
    await rename(tmp, copy).catch(async (err) => {
      if (!existsSync(copy)) throw err; // a concurrent build made it first
      await rm(tmp, { recursive: true, force: true });
    });
    await removeOldCopies(bin, copy);
  }
  const modFile = path.join(bin, "patched.mod");
  const goMod = await readFile(path.join(toolDir, "go.mod"), "utf8");
  // Written aside and renamed into place: a concurrent build (parallel tests, launchers
  // starting together) reads either the old file or the new one, never a half-written one.
  const tmpMod = `${modFile}.${process.pid}.tmp`;
  const tmpSum = `${path.join(bin, "patched.sum")}.${process.pid}.tmp`;
  await writeFile(tmpMod, `${goMod}\nreplace github.com/FerretDB/FerretDB => ${copy}\n`);
  await cp(path.join(toolDir, "go.sum"), tmpSum);
  await rename(tmpSum, path.join(bin, "patched.sum"));
  await rename(tmpMod, modFile);
  return modFile;
}

/**
 * What the binary is built from: the program's sources and module files, the patches and added
 * files, and the Go version. Kept beside the binary after a build; a start whose key matches
 * runs the binary as it is. (`go build -o` into a fresh temporary file links again every time:
 * 3-15 s on a 2-core machine, paid by every process that starts the database.)
 */
async function buildKey(): Promise<string> {
  const { stdout: goVersion } = await run("go", ["env", "GOVERSION"], { cwd: toolDir });
  const sources = (await readdir(toolDir)).filter((f) => f.endsWith(".go") || f === "go.mod" || f === "go.sum").sort();
  const hash = createHash("sha256").update(goVersion.trim()).update(JSON.stringify(PATCHES));
  for (const f of sources) hash.update(f).update("\0").update(await readFile(path.join(toolDir, f))).update("\0");
  for (const f of Object.values(ADDED_FILES).sort()) hash.update(f).update("\0").update(await readFile(path.join(toolDir, "patches", f))).update("\0");
  return hash.digest("hex");
}

/**
 * Builds the embedded database (FerretDB over SQLite, see tools/embedded-db) with the local
 * Go toolchain, unless the binary was built from the same sources (buildKey): cheap after the
 * first run. `npm ci` builds it (cmd/build-embedded-db.ts). The output is renamed into place so
 * concurrent starts never see a half-written file. The first build downloads and compiles
 * FerretDB (about two minutes on a fresh machine, and silent otherwise): `progress` hears
 * about it when it lasts.
 */
export async function buildEmbeddedDb(progress?: Progress): Promise<string> {
  const key = await buildKey().catch(() => undefined);
  const keyFile = `${binary}.key`;
  if (key && existsSync(binary) && (await readFile(keyFile, "utf8").catch(() => "")) === key) return binary;
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
  if (key) {
    await writeFile(`${keyFile}.${process.pid}.tmp`, key);
    await rename(`${keyFile}.${process.pid}.tmp`, keyFile);
  }
  return binary;
}

/** Starts the database process and resolves with it and its URL once it says READY. */
function spawnDb(bin: string, args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child: ChildProcess = spawn(bin, args, {
    stdio: ["pipe", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (line) => {
      if (line.startsWith("READY ")) resolve({ child, url: line.slice("READY ".length).trim() });
    });
    child.once("error", reject);
    child.once("exit", (code, signal) => reject(new Error(`embedded database exited early with ${signal ? `signal ${signal}` : `code ${code}`}`)));
  });
}

/** Ends the database process: closing its standard input asks it to stop; SIGKILL after 5 s. */
function stopDb(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.stdin?.end();
    setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
  });
}

/**
 * Starts the embedded MongoDB-compatible database keeping its files in `dir`. It stops when
 * stop() is called or when this process exits (it watches its standard input).
 *
 * With `supervise`, a database process that dies (killed, out of memory) is started again on
 * the same address and files, with backoff (lib/src/supervise.ts): clients' drivers reconnect
 * by themselves, and a crash loses nothing acknowledged (SQLite's write-ahead log; see
 * tools/embedded-db/README.md). Five failures within a minute call `supervise.onGiveUp`.
 */
export async function startEmbeddedDb(
  dir: string,
  opts: { port?: number; flags?: string[]; progress?: Progress; supervise?: { logger: Logger; onGiveUp(reason: Error): void } } = {},
): Promise<EmbeddedDb> {
  const bin = await buildEmbeddedDb(opts.progress);
  await mkdir(dir, { recursive: true });
  const args = (port: number) => {
    const a = ["-dir", dir, "-listen", `127.0.0.1:${port}`, ...(opts.flags ?? [])];
    // Diagnostics: log every command slower than this Go duration (e.g. "500ms") to stderr.
    if (process.env.EMBEDDED_DB_SLOW) a.push("-slow", process.env.EMBEDDED_DB_SLOW);
    // Memory for the proxy's answers of reads by _id (tools/embedded-db/readcache.go); 0 turns it off.
    if (process.env.EMBEDDED_DB_READ_CACHE_MB) a.push("-read-cache-mb", process.env.EMBEDDED_DB_READ_CACHE_MB);
    // "full" flushes every commit to the disk; the default "normal" flushes every second (see tools/embedded-db/main.go).
    if (process.env.EMBEDDED_DB_SYNCHRONOUS) a.push("-synchronous", process.env.EMBEDDED_DB_SYNCHRONOUS);
    // Diagnostics: serve Go's pprof profiles on this address (e.g. "127.0.0.1:6061").
    if (process.env.EMBEDDED_DB_PPROF) a.push("-pprof", process.env.EMBEDDED_DB_PPROF);
    return a;
  };
  const first = await spawnDb(bin, args(opts.port ?? 0));
  const { url } = first;
  if (!opts.supervise) {
    return { url, pid: first.child.pid, stop: () => stopDb(first.child) };
  }
  // A restart listens where the first process did, so that clients find it at the same URL.
  const port = Number(new URL(url).port);
  const supervisor = await supervise({
    name: "embedded database",
    logger: opts.supervise.logger,
    onGiveUp: opts.supervise.onGiveUp,
    start: async () => (await spawnDb(bin, args(port))).child,
    firstChild: first.child,
  });
  return {
    url,
    get pid() {
      return supervisor.child?.pid;
    },
    stop: () => supervisor.stop(stopDb),
  };
}
