import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MongoClient } from "mongodb";
import { startEmbeddedDb, type EmbeddedDb } from "./embedded-db.ts";
import { connectMongo, isDuplicateKeyError } from "./mongo.ts";
import { eventually } from "../../test/support/eventually.ts";

// The embedded database's own upkeep (tools/embedded-db/maintain.go), checked on its files.
const t = suite<{ dir: string; db: EmbeddedDb; mongo: MongoClient }>("embedded database upkeep");

const WAL_LIMIT = 1 << 20;

t.before(async (ctx) => {
  ctx.dir = await mkdtemp(path.join(os.tmpdir(), "meter-edb-"));
  ctx.db = await startEmbeddedDb(ctx.dir, { flags: ["-wal-limit", String(WAL_LIMIT), "-maintain-every", "100ms"] });
  ctx.mongo = await connectMongo(ctx.db.url);
});
t.after(async (ctx) => {
  await ctx.mongo.close();
  await ctx.db.stop();
  await rm(ctx.dir, { recursive: true, force: true });
});

/** SQLite's plan for FerretDB's lookup by _id on the collection's table. */
function lookupPlan(file: string): string | undefined {
  const sqlite = new DatabaseSync(file, { readOnly: true });
  try {
    const row = sqlite.prepare(`SELECT table_name FROM _ferretdb_collections WHERE name = 'docs'`).get() as { table_name: string } | undefined;
    if (!row) return undefined;
    const plan = sqlite.prepare(`EXPLAIN QUERY PLAN SELECT _ferretdb_sjson FROM "${row.table_name}" WHERE _ferretdb_sjson->'$._id' = ?`).all('"x"');
    return plan.map((p) => String((p as { detail: string }).detail)).join("; ");
  } finally {
    sqlite.close();
  }
}

/** Suffixes of the indexes on the collection's _id (FerretDB's own ends in "__id_"). */
function idIndexes(file: string): string[] {
  const sqlite = new DatabaseSync(file, { readOnly: true });
  try {
    const { table_name } = sqlite.prepare(`SELECT table_name FROM _ferretdb_collections WHERE name = 'docs'`).get() as { table_name: string };
    const rows = sqlite.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?`).all(table_name) as { name: string }[];
    return rows.map((r) => r.name.slice(table_name.length)).filter((n) => n.startsWith("__id_"));
  } finally {
    sqlite.close();
  }
}

t("lookups by _id use an index, so they do not read the whole collection", async ({ mongo, dir }) => {
  const docs = mongo.db("upkeep").collection<{ _id: string; n: number }>("docs");
  await docs.insertMany(Array.from({ length: 500 }, (_, n) => ({ _id: `d${n}`, n })));
  const file = path.join(dir, "upkeep.sqlite");
  const indexed = () =>
    eventually(() => {
      const p = lookupPlan(file);
      return p && /USING INDEX/.test(p) ? p : undefined;
    }, 20_000, "an index in the lookup plan");
  assert.match(await indexed(), /__id_lookup/);
  assert.equal(idIndexes(file), ["__id_lookup"], "it replaces FerretDB's unused _id index: inserts maintain one");
  const duplicate = await docs.insertOne({ _id: "d5", n: 0 }).then(() => null, (err: unknown) => err);
  assert.ok(isDuplicateKeyError(duplicate), "_id stays unique");
  assert.equal(await docs.findOne({ _id: "d123" }), { _id: "d123", n: 123 });
  await docs.deleteOne({ _id: "d7" });
  assert.is(await docs.countDocuments(), 499);
  // A dropped database comes back as a new file under the same name: indexed too.
  await mongo.db("upkeep").dropDatabase();
  await docs.insertMany([{ _id: "again", n: 1 }]);
  assert.match(await indexed(), /__id_lookup/);
});

t("a filter on _id and more reads by _id, and still applies the rest", async ({ mongo }) => {
  const docs = mongo.db("pushdown").collection<{ _id: string; n: number; jobs: string[] }>("docs");
  await docs.insertMany(Array.from({ length: 50 }, (_, n) => ({ _id: `d${n}`, n, jobs: [] })));
  const filter = { _id: "d3", jobs: { $ne: "j1" } };
  const plan = await mongo.db("pushdown").command({ explain: { find: "docs", filter } });
  assert.is(plan.filterPushdown, true, "narrowed by _id in the database, not by reading every document");
  // A guarded update applies once: the part of the filter beside _id is still checked.
  for (let i = 0; i < 2; i++) await docs.updateOne(filter, { $inc: { n: 100 }, $push: { jobs: "j1" } });
  assert.equal(await docs.findOne({ _id: "d3" }), { _id: "d3", n: 103, jobs: ["j1"] });
  assert.is(await docs.countDocuments({ _id: "d4", n: 5 }), 0, "a document with the _id but not the rest is not matched");
});

t("a filter on a list of _ids reads those documents only", async ({ mongo }) => {
  const docs = mongo.db("pushin").collection<{ _id: string; n: number }>("docs");
  await docs.insertMany(Array.from({ length: 50 }, (_, n) => ({ _id: `d${n}`, n })));
  const filter = { _id: { $in: ["d1", "d7", "d7", "missing", "d42"] } };
  const plan = await mongo.db("pushin").command({ explain: { find: "docs", filter } });
  assert.is(plan.filterPushdown, true, "narrowed by _id in the database");
  const found = await docs.find(filter).toArray();
  assert.equal(found.map((d) => d._id).sort(), ["d1", "d42", "d7"]);
  assert.equal(await docs.find({ _id: { $in: ["d1", "d2"] }, n: 2 }).toArray(), [{ _id: "d2", n: 2 }], "the rest of the filter still applies");
  const mixed = await mongo.db("pushin").command({ explain: { find: "docs", filter: { _id: { $in: ["d1", /d2/] } } } });
  assert.is(mixed.filterPushdown, false, "a list with anything but plain ids is not narrowed");
  assert.equal((await docs.find({ _id: { $in: ["d1", /^d2$/] } }).toArray()).map((d) => d._id).sort(), ["d1", "d2"]);
});

t("an update command of many statements applies each, however long", async ({ mongo }) => {
  // Each statement used to keep its read (a pooled connection) open to the end of the
  // command: past 100 statements the command waited for a connection forever.
  const docs = mongo.db("bulk").collection<{ _id: string; n: number; jobs?: Record<string, 1> }>("counters");
  await docs.insertMany(Array.from({ length: 100 }, (_, i) => ({ _id: `c${i}`, n: 0 })));
  const statements = (job: string) =>
    Array.from({ length: 250 }, (_, i) => ({
      updateOne: {
        filter: { _id: `c${i % 150}`, [`jobs.${job}`]: { $exists: false } },
        update: { $inc: { n: 1 }, $set: { [`jobs.${job}`]: 1 as const } },
        upsert: true,
      },
    }));
  const first = await docs.bulkWrite(statements("j1").slice(0, 150), { ordered: false });
  assert.is(first.matchedCount + first.upsertedCount, 150);
  assert.is(first.upsertedCount, 50, "the 50 missing counters are created");
  assert.is(await docs.countDocuments({ n: 1 }), 150);
  const second = await docs.bulkWrite(statements("j2").slice(0, 150), { ordered: false });
  assert.is(second.matchedCount, 150);
  assert.is(await docs.countDocuments({ n: 2 }), 150);
});

t("the write-ahead log is emptied once it grows past its limit", async ({ mongo, dir }) => {
  const big = mongo.db("walgrowth").collection<{ _id: number; pad: string }>("rows");
  const pad = "x".repeat(4096);
  for (let i = 0; i < 8; i++) await big.insertMany(Array.from({ length: 100 }, (_, j) => ({ _id: i * 100 + j, pad })));
  const wal = path.join(dir, "walgrowth.sqlite-wal");
  await eventually(async () => (await stat(wal)).size < WAL_LIMIT, 20_000, "the log to be emptied");
  assert.is(await big.countDocuments(), 800, "nothing lost by the checkpoint");
  assert.ok((await readdir(dir)).includes("walgrowth.sqlite"));
});

t.run();
