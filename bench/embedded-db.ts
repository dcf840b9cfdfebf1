// `npm run bench:embedded-db`: what the embedded database (tools/embedded-db: FerretDB over
// SQLite behind its proxy) costs per command, in CPU time of its process (utime + stime from
// /proc), which the machine's load moves far less than latencies. One collection of
// BENCH_DOCS documents of about 500 bytes inserted in commands of 1,000, then BENCH_OPS
// `updateOne` ($inc of two fields) and BENCH_OPS `findOne`, each by a random `_id`, one at a
// time, with the proxy's read cache off (as for a read of a document not read before).
// BENCH_ROUNDS rounds, each on a fresh database; BENCH_BINARY measures another build of
// tools/embedded-db (e.g. one made from an earlier commit) against the current one, alternating.
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createInterface } from "node:readline";
import os from "node:os";
import path from "node:path";
import { buildEmbeddedDb } from "@meter/lib/embedded-db";
import { connectMongo } from "@meter/lib/mongo";
import { pct } from "./support/stats.ts";

const DOCS = Number(process.env.BENCH_DOCS ?? 20_000);
const OPS = Number(process.env.BENCH_OPS ?? 4_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
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
  await mongo.close();
  child.stdin!.end();
  await new Promise((r) => child.once("exit", r));
  await rm(dir, { recursive: true, force: true });
  const us = (v: number) => v.toFixed(0).padStart(8);
  const ms = (t: { p50: number; p99: number }) => `${t.p50.toFixed(2)} / ${t.p99.toFixed(2)}`.padStart(14);
  return `${us(inserts.cpu / DOCS)}${us(updates.cpu / OPS)}${us(reads.cpu / OPS)}${ms(updates)}${ms(reads)}${os.loadavg()[0]!.toFixed(1).padStart(8)}`;
}

console.log(`bench:embedded-db: ${DOCS} documents, ${OPS} updates and ${OPS} reads by _id a round; CPU of the database process per command (us), latency p50 / p99 (ms)`);
console.log(`${"binary".padEnd(40)}  insert/doc  update    read   update ms      read ms    load`);
for (let r = 0; r < ROUNDS; r++) for (const bin of binaries) console.log(`${path.relative(process.cwd(), bin).padEnd(40)}${await round(bin)}`);
process.exit(0);
