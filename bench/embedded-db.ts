// `npm run bench:embedded-db`: what the embedded database (tools/embedded-db: FerretDB over
// SQLite behind its proxy) costs per command, in CPU time of its process (utime + stime from
// /proc), which the machine's load moves far less than latencies. One collection of
// BENCH_DOCS documents of about 500 bytes inserted in commands of 1,000, then BENCH_OPS
// `updateOne` ($inc of two fields) and BENCH_OPS `findOne`, each by a random `_id`, one at a
// time, with the proxy's read cache off (as for a read of a document not read before); then the
// same on BENCH_COUNTERS (1,000) documents shaped like a user's period counter (nested totals,
// job guards, window entries), each update guarded and setting a job entry as a counter's does,
// one at a time and then in commands of 100 statements (as the services' rounds send them);
// then LISTS reads and LISTS deletes of a list of 1,000 `_id`s each (`{_id: {$in: [...]}}`), and
// LISTS reads of the 1,000 counters' money fields (a credit settle's read of spends), in the
// driver's default batches (101, then `getMore`s) and as findByIds asks, in one answer.
// BENCH_ROUNDS rounds, each on a fresh database; BENCH_BINARY measures another build of
// tools/embedded-db (e.g. one made from an earlier commit) against the current one, alternating.
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createInterface } from "node:readline";
import os from "node:os";
import path from "node:path";
import { buildEmbeddedDb } from "@meter/lib/embedded-db";
import { Double } from "mongodb";
import { connectMongo, findByIds } from "@meter/lib/mongo";
import { pct } from "./support/stats.ts";

const DOCS = Number(process.env.BENCH_DOCS ?? 20_000);
const OPS = Number(process.env.BENCH_OPS ?? 4_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const COUNTERS = Number(process.env.BENCH_COUNTERS ?? 1_000);
/** Statements of one update command in the "in commands" column (a counters' round holds about 100). */
const STATEMENTS = 100;
/** Reads, then deletes, of a list of 1,000 `_id`s (the "list read" and "list delete" columns). */
const LISTS = 10;
const binaries = [await buildEmbeddedDb(), ...(process.env.BENCH_BINARY ? [process.env.BENCH_BINARY] : [])];

/** CPU time (ms) of a process so far. */
async function cpuMs(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * (1000 / 100);
}

async function round(bin: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "bench-embedded-db-"));
  const child = spawn(bin, ["-dir", dir, "-listen", "127.0.0.1:0", "-read-cache-mb", "0"], { stdio: ["pipe", "pipe", "inherit"] });
  const url = await new Promise<string>((resolve) =>
    createInterface({ input: child.stdout! }).on("line", (l) => l.startsWith("READY ") && resolve(l.slice("READY ".length).split(" ")[0]!)),
  );
  const mongo = await connectMongo(url);
  const col = mongo.db("bench").collection<{ _id: string }>("docs");
  const pad = "x".repeat(400);
  const timed = async (n: number, op: (i: number) => Promise<unknown>) => {
    const times: number[] = [];
    const before = await cpuMs(child.pid!);
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await op(i);
      times.push(performance.now() - t);
    }
    const cpu = ((await cpuMs(child.pid!)) - before) * 1000;
    times.sort((a, b) => a - b);
    return { cpu, p50: pct(times, 50), p99: pct(times, 99) };
  };
  const id = () => `doc-${Math.floor(Math.random() * DOCS)}`;
  const inserts = await timed(DOCS / 1000, (b) =>
    col.insertMany(Array.from({ length: 1000 }, (_, k) => ({ _id: `doc-${b * 1000 + k}`, n: k, pad, totals: { cost: 0, tokens: 0 } }))),
  );
  const updates = await timed(OPS, () => col.updateOne({ _id: id() }, { $inc: { n: 1, "totals.cost": 2 } }));
  const reads = await timed(OPS, () => col.findOne({ _id: id() }));
  // Documents shaped like a user's period counter (nested totals by model, job guards, window
  // entries): FerretDB decodes a stored document level by level, so nesting costs what size does not.
  const counters = mongo.db("bench").collection<{ _id: string }>("counters");
  const counter = (i: number) => `counter-${i % COUNTERS}`;
  const models = ["gpt-4o", "gpt-4o-mini", "claude-sonnet"];
  await counters.insertMany(
    Array.from({ length: COUNTERS }, (_, i) => ({
      _id: counter(i),
      product_id: "p",
      user_id: `user-${i}`,
      period_start: new Date(),
      period_end: new Date(),
      cost_nano: new Double(0),
      tokens: new Double(0),
      events: new Double(0),
      tokens_by_model: Object.fromEntries(models.map((m) => [m, new Double(0)])),
      cost_nano_by_model: Object.fromEntries(models.map((m) => [m, new Double(0)])),
      jobs: { "job-a": 1, "job-b": 1 },
      w: Object.fromEntries(["spend:day", "spend:rolling|1", "spend:rolling|2", "requests:minute"].map((k) => [k, { n: new Double(0), e: new Double(Date.now()) }])),
    })),
  );
  const counterUpdates = await timed(OPS, (i) =>
    counters.updateOne(
      { _id: counter(i), [`jobs.job-${i}`]: { $exists: false } },
      {
        $inc: { cost_nano: new Double(1000), tokens: new Double(10), events: new Double(1), "tokens_by_model.gpt-4o": new Double(10), "cost_nano_by_model.gpt-4o": new Double(1000), "w.spend:day.n": new Double(1000) },
        $set: { [`jobs.job-${i}`]: 1 },
        $unset: { [`jobs.job-${i - COUNTERS}`]: "" },
      },
    ),
  );
  const counterReads = await timed(OPS, (i) => counters.findOne({ _id: counter(i * 7) }));
  // The same guarded updates as the services send them: a command of STATEMENTS distinct counters.
  const bulkUpdates = await timed(OPS / STATEMENTS, (b) =>
    counters.bulkWrite(
      Array.from({ length: STATEMENTS }, (_, k) => {
        const i = OPS + b * STATEMENTS + k;
        return {
          updateOne: {
            filter: { _id: counter(i), [`jobs.job-${i}`]: { $exists: false } },
            update: {
              $inc: { cost_nano: new Double(1000), tokens: new Double(10), events: new Double(1), "w.spend:day.n": new Double(1000) },
              $set: { [`jobs.job-${i}`]: 1 },
              $unset: { [`jobs.job-${i - COUNTERS}`]: "" },
            },
          },
        };
      }),
      { ordered: false },
    ),
  );
  // Reads and deletes of a list of 1,000 _ids, as a batch's rounds send them: FerretDB filters
  // each document found against the whole list again (patches/in_scalars.go.in).
  const ids = (from: number, step: number) => Array.from({ length: 1000 }, (_, k) => `doc-${(from + k * step) % DOCS}`);
  const listReads = await timed(LISTS, (i) => col.find({ _id: { $in: ids(i * 1000, 7) } }).toArray());
  const listDeletes = await timed(LISTS, (i) => col.deleteMany({ _id: { $in: ids(i * 1000, 1) } }));
  const spends = { projection: { cost_nano: 1, cost: 1, credited_nano: 1 } };
  const allCounters = Array.from({ length: COUNTERS }, (_, i) => counter(i));
  const batchedReads = await timed(LISTS, () => counters.find({ _id: { $in: allCounters } }, spends).toArray());
  const oneAnswerReads = await timed(LISTS, () => findByIds(counters, allCounters, spends));
  await mongo.close();
  child.stdin!.end();
  await new Promise((r) => child.once("exit", r));
  await rm(dir, { recursive: true, force: true });
  const us = (v: number) => v.toFixed(0).padStart(8);
  const ms = (t: { p50: number; p99: number }) => `${t.p50.toFixed(2)} / ${t.p99.toFixed(2)}`.padStart(14);
  return `${us(inserts.cpu / DOCS)}${us(updates.cpu / OPS)}${us(reads.cpu / OPS)}${ms(updates)}${ms(reads)}${us(counterUpdates.cpu / OPS).padStart(13)}${us(counterReads.cpu / OPS).padStart(13)}${us(bulkUpdates.cpu / OPS).padStart(13)}${us(listReads.cpu / LISTS).padStart(12)}${us(listDeletes.cpu / LISTS).padStart(12)}${us(batchedReads.cpu / LISTS).padStart(14)}${us(oneAnswerReads.cpu / LISTS).padStart(12)}${os.loadavg()[0]!.toFixed(1).padStart(8)}`;
}

console.log(`bench:embedded-db: ${DOCS} documents, ${OPS} updates and ${OPS} reads by _id a round; CPU of the database process per command (us), latency p50 / p99 (ms)`);
console.log(`${"binary".padEnd(40)}  insert/doc  update    read   update ms      read ms  counter update  counter read  in commands   list read list delete  counter list  one answer    load`);
for (let r = 0; r < ROUNDS; r++) for (const bin of binaries) console.log(`${path.relative(process.cwd(), bin).padEnd(40)}${await round(bin)}`);
process.exit(0);
