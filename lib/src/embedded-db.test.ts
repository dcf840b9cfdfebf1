import { mkdir, mkdtemp, readdir, rm, stat, utimes } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Double, Long, ObjectId, type Document, type MongoClient, type UpdateFilter } from "mongodb";
import { removeOldCopies, startEmbeddedDb, type EmbeddedDb } from "./embedded-db.ts";
import { connectMongo, findByIds, isDuplicateKeyError } from "./mongo.ts";
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
  assert.equal(idIndexes(file).sort(), ["__id_lookup", "__id_order"], "it replaces FerretDB's unused _id index (and adds the order index of ranges)");
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

t("a new collection's table has its _id indexes from its first write, before the maintainer's round", async ({ mongo, dir }) => {
  await mongo.db("fresh").collection<{ _id: string }>("docs").insertOne({ _id: "first" });
  // Read at once: the maintainer (every 100 ms here) has most likely not run since the insert.
  assert.equal(idIndexes(path.join(dir, "fresh.sqlite")).sort(), ["__id_lookup", "__id_order"]);
  assert.match(lookupPlan(path.join(dir, "fresh.sqlite")) ?? "", /USING INDEX .*__id_lookup/);
});

t("an update command's statements run as one: each sees those before it, a failing one undoes only itself", async ({ mongo }) => {
  const docs = mongo.db("batched").collection<{ _id: string; n: number; jobs?: Record<string, 1> }>("docs");
  await docs.insertMany([{ _id: "a", n: 0 }, { _id: "b", n: 0, jobs: { j1: 1 } }]);
  const guarded = (id: string) => ({ updateOne: { filter: { _id: id, "jobs.j1": { $exists: false } }, update: { $inc: { n: 1 }, $set: { "jobs.j1": 1 as const } }, upsert: true } });
  const failed = await docs
    .bulkWrite([{ updateOne: { filter: { _id: "a" }, update: { $inc: { n: 1 } } } }, { updateOne: { filter: { _id: "a" }, update: { $inc: { n: 10 } } } }, guarded("b")], { ordered: false })
    .then(() => null, (err: unknown) => err);
  assert.ok(isDuplicateKeyError(failed), "the guarded upsert of a document that has the job collides on _id");
  assert.equal(await docs.findOne({ _id: "a" }), { _id: "a", n: 11 }, "the statements before it stay, the second seeing the first");
  assert.equal(await docs.findOne({ _id: "b" }), { _id: "b", n: 0, jobs: { j1: 1 } }, "the colliding statement changed nothing");
  // The command's transaction ended: the next commands write and read as usual.
  await docs.bulkWrite([guarded("a"), guarded("c"), { updateOne: { filter: { _id: "a" }, update: { $inc: { n: 100 } } } }], { ordered: false });
  assert.equal(await docs.find().sort({ _id: 1 }).toArray(), [
    { _id: "a", n: 112, jobs: { j1: 1 } },
    { _id: "b", n: 0, jobs: { j1: 1 } },
    { _id: "c", n: 1, jobs: { j1: 1 } },
  ]);
  // An update of many documents (multi) in a command of several statements.
  await docs.bulkWrite([{ updateMany: { filter: {}, update: { $inc: { n: 1 } } } }, { updateOne: { filter: { _id: "b" }, update: { $inc: { n: 1 } } } }], { ordered: false });
  assert.equal((await docs.find().sort({ _id: 1 }).toArray()).map((d) => d.n), [113, 2, 2]);
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

t("$in compares strings and ObjectIDs as MongoDB does, and a list of a thousand ids is read and deleted whole", async ({ mongo }) => {
  const docs = mongo.db("inlists").collection<{ _id: unknown; tags?: unknown }>("docs");
  const oid = new ObjectId();
  const other = new ObjectId();
  await docs.insertMany([{ _id: "a" }, { _id: "b", tags: ["x", "y"] }, { _id: oid }, { _id: 7 }, { _id: "7" }, { _id: "A" }]);
  const name = (id: unknown) => (typeof id === "string" ? id : id instanceof ObjectId ? `oid:${id}` : `${typeof id}:${String(id)}`);
  const ids = async (filter: object) => (await docs.find(filter).toArray()).map((d) => name(d._id)).sort();
  assert.equal(await ids({ _id: { $in: ["a", oid, "missing", other] } }), ["a", `oid:${oid}`].sort(), "strings and ObjectIDs mixed");
  assert.equal(await ids({ _id: { $in: [String(oid), "a"] } }), ["a"], "an ObjectID's hex is not the ObjectID");
  assert.equal(await ids({ _id: { $in: ["7"] } }), ["7"], "a string is not the number");
  assert.equal(await ids({ _id: { $in: [7, "a"] } }), ["a", "number:7"], "a number in the list still finds the number (the general comparison)");
  assert.equal(await ids({ _id: { $in: ["a"] }, tags: { $in: ["y"] } }), [], "the rest of the filter still applies");
  assert.equal(await ids({ tags: { $in: ["y", "z"] } }), ["b"], "an array field matches by its elements (the general comparison)");
  assert.equal(await ids({ _id: { $in: ["x", /^[aA]$/] } }), ["A", "a"], "a regex in the list still matches");
  // From 16 values on, a list of strings and ObjectIDs is looked up in a set: the same answers.
  const filler = Array.from({ length: 20 }, (_, i) => `filler-${i}`);
  assert.equal(await ids({ _id: { $in: [...filler, "a", oid, "missing", other] } }), ["a", `oid:${oid}`].sort(), "a long list of strings and ObjectIDs");
  assert.equal(await ids({ _id: { $in: [...filler, String(oid), "7"] } }), ["7"], "a long list: an ObjectID's hex is not the ObjectID, a string not the number");
  assert.equal(await ids({ _id: { $in: [...filler, 7, "a"] } }), ["a", "number:7"], "a long list with a number still finds the number");
  assert.equal(await ids({ _id: { $in: [...filler, "x", /^[aA]$/] } }), ["A", "a"], "a long list with a regex still matches by it");

  const many = mongo.db("inlists").collection<{ _id: string }>("many");
  await many.insertMany(Array.from({ length: 1_500 }, (_, i) => ({ _id: `id-${i}` })));
  const list = Array.from({ length: 1_000 }, (_, i) => `id-${i * 3}`);
  assert.is((await many.find({ _id: { $in: list } }).toArray()).length, 500, "ids 0, 3, ... 1497 of the list exist");
  assert.is((await many.deleteMany({ _id: { $in: list } })).deletedCount, 500);
  assert.is(await many.countDocuments(), 1_000);
});

/** The least string above every string that starts with `p` (its last code point plus one). */
const afterPrefix = (p: string) => {
  const points = Array.from(p);
  const last = points.pop()!.codePointAt(0)!;
  return points.join("") + String.fromCodePoint(last === 0xd7ff ? 0xe000 : last + 1);
};
/** MongoDB's order of strings: UTF-8 bytes (JavaScript's `<` compares UTF-16 units). */
const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

t("a range of string _ids sorted by _id with a limit reads the range in order: the rows MongoDB's semantics give", async ({ mongo, dir }) => {
  const docs = mongo.db("ranges").collection<{ _id: unknown; n: number }>("docs");
  const strings = [
    "", "p", "p:", "p:a", "p:a.b", "p:axb", "p:a*", "p:a+1", "p:(x)", "p:[x]", "p:^x$", "p:a\\b", 'p:a"b', "p:a<b", "p:a&b", "p:a\u0001", "p:a\nb",
    "p:z", "p:z\uffff", "p:z\uffff1", "p:z\u{1F600}", "p:z\u{10FFFF}", "p:zz", "p:é", "p:E", "p;", "q", "o:zzz", "p:\u007f", "p:\u0080",
    ...Array.from({ length: 300 }, (_, i) => `p:n${String(i).padStart(3, "0")}`),
  ];
  let n = 0;
  await docs.insertMany(strings.map((s) => ({ _id: s, n: n++ })));
  // Other _id types never match a string range (MongoDB compares strings with strings only).
  await docs.insertMany([{ _id: 1, n: n++ }, { _id: 2.5, n: n++ }, { _id: new ObjectId(), n: n++ }, { _id: { a: "p:a" }, n: n++ }, { _id: true, n: n++ }]);
  const strIds = strings.slice().sort(byteOrder);
  const cases: { range: Record<string, string>; dir: 1 | -1; limit: number }[] = [];
  for (const prefix of ["p:", "p:a", "p:a.", "p:a*", "p:(", "p:[", "p:^", "p:a\\", 'p:a"', "p:z", "p:z\uffff", "p:z\u{1F600}", "p:n1", "p:n29", "p:nothing"]) {
    for (const limit of [1, 3, 50, 0]) cases.push({ range: { $gte: prefix, $lt: afterPrefix(prefix) }, dir: 1, limit });
  }
  cases.push({ range: { $gt: "p:n050", $lt: "p;" }, dir: 1, limit: 7 });
  cases.push({ range: { $gt: "p:n050", $lte: "p:n060" }, dir: -1, limit: 4 });
  cases.push({ range: { $gte: "" }, dir: 1, limit: 5 });
  cases.push({ range: { $lt: "p:" }, dir: -1, limit: 3 });
  cases.push({ range: { $gte: "p:z", $lt: "p:z" }, dir: 1, limit: 3 });
  const inRange = (id: string, r: Record<string, string>) =>
    (r.$gte === undefined || byteOrder(id, r.$gte) >= 0) && (r.$gt === undefined || byteOrder(id, r.$gt) > 0) &&
    (r.$lt === undefined || byteOrder(id, r.$lt) < 0) && (r.$lte === undefined || byteOrder(id, r.$lte) <= 0);
  for (const c of cases) {
    const expected = strIds.filter((id) => inRange(id, c.range));
    if (c.dir === -1) expected.reverse();
    const want = c.limit ? expected.slice(0, c.limit) : expected;
    const got = await docs.find({ _id: c.range }).sort({ _id: c.dir }).limit(c.limit).toArray();
    assert.equal(got.map((d) => d._id), want, JSON.stringify(c));
  }
  // The rest of a filter beside the range still applies (the limit is then applied after it).
  assert.equal((await docs.find({ _id: { $gte: "p:n", $lt: "p:o" } as never, n: { $gte: 100 } }).sort({ _id: 1 }).limit(2).toArray()).map((d) => d.n), [100, 101]);
  // The range is read through the order index, in order, with the limit: not the whole table.
  const plan = await eventually(() => {
    const p = rangePlan(path.join(dir, "ranges.sqlite"));
    return p && /USING INDEX .*__id_order/.test(p) && !/TEMP B-TREE/.test(p) ? p : undefined;
  }, 20_000, "the order index in the range's plan");
  assert.ok(plan);
  const explained = await mongo.db("ranges").command({ explain: { find: "docs", filter: { _id: { $gte: "p:a", $lt: "p:b" } }, sort: { _id: 1 }, limit: 2 } });
  assert.is(explained.filterPushdown, true);
});

/** SQLite's plan for the patched find of a range of _ids in order. */
function rangePlan(file: string): string | undefined {
  const sqlite = new DatabaseSync(file, { readOnly: true });
  try {
    const row = sqlite.prepare(`SELECT table_name FROM _ferretdb_collections WHERE name = 'docs'`).get() as { table_name: string } | undefined;
    if (!row) return undefined;
    const expr = `_ferretdb_sjson->>'$._id'`;
    const plan = sqlite
      .prepare(`EXPLAIN QUERY PLAN SELECT _ferretdb_sjson FROM "${row.table_name}" WHERE _ferretdb_sjson->>'$."$s".p._id.t' = 'string' AND ${expr} >= ? AND ${expr} < ? ORDER BY ${expr} LIMIT 3`)
      .all("p:a", "p:b");
    return plan.map((p) => String((p as { detail: string }).detail)).join("; ");
  } finally {
    sqlite.close();
  }
}

t("documents read back exactly as written, whatever their values (stored documents are decoded by go-json)", async ({ mongo }) => {
  const docs = mongo.db("values").collection<Document & { _id: string }>("docs");
  const strings = ["", "plain", 'quote " backslash \\ slash /', "<tag> & ampersand", "tab\tnew\nline\u0001", "é ü 中文 🎉", "\u2028\u2029", "x".repeat(5000)];
  const doc = {
    _id: "user <&> \"1\" 🎉",
    strings,
    doubles: [0.1, 0.2 + 0.1, 1e21, 1.5e-7, -0.5, 2 ** 53, 123456789.123456, Number.MAX_VALUE, Number.MIN_VALUE],
    ints: [0, -1, 2 ** 31 - 1, -(2 ** 31)],
    longs: [Long.fromString("9223372036854775807"), Long.fromString("-9223372036854775808"), Long.fromNumber(2 ** 40)],
    wide: new Double(5_250_000_000),
    when: new Date("2026-03-07T17:00:00.123Z"),
    before1970: new Date("1969-07-20T20:17:40Z"),
    yes: true,
    no: false,
    nothing: null,
    oid: new ObjectId("65a1b2c3d4e5f60718293a4b"),
    nested: { a: { b: { c: [1, "two", { three: 3, list: [4, 5.5] }], "key with spaces": 1, "ключ": 2 } }, empty: {}, list: [] },
  };
  await docs.insertOne(doc);
  const back = await docs.findOne({ _id: doc._id }, { promoteLongs: false });
  assert.equal(back, { ...doc, wide: 5_250_000_000 });
  // And as an update reads and rewrites them.
  await docs.updateOne({ _id: doc._id }, { $inc: { "nested.a.b.counter": 1 } } as UpdateFilter<Document & { _id: string }>);
  const updated = await docs.findOne({ _id: doc._id }, { promoteLongs: false });
  assert.equal(updated, { ...doc, wide: 5_250_000_000, nested: { ...doc.nested, a: { b: { ...doc.nested.a.b, counter: 1 } } } });
});

// A find whose projection includes top-level fields (and whose filter and sort name top-level
// fields) decodes only those of each stored document: the answers are MongoDB's for every kind
// of value and every form of projection, those it does not narrow included.
t("projected finds answer what MongoDB answers, whether or not they decode whole documents", async ({ mongo }) => {
  const docs = mongo.db("projected").collection<Document & { _id: string }>("docs");
  const all = Array.from({ length: 150 }, (_, i) => ({
    _id: `d${String(i).padStart(3, "0")}`,
    n: i,
    wide: new Double(5_250_000_000 + i),
    long: Long.fromNumber(2 ** 40 + i),
    when: new Date(Date.UTC(2026, 2, 7, 17, 0, 0, i)),
    oid: new ObjectId(i.toString(16).padStart(24, "0")),
    text: `é ü "${i}" 🎉`,
    flag: i % 2 === 0,
    nothing: null,
    nested: { a: { b: [i, "two", { three: 3 }] }, empty: {} },
    list: [i, { k: "v" }],
    jobs: { [`job-${i}`]: 1 },
  }));
  await docs.insertMany(all);
  const ids = all.map((d) => d._id);
  const pick = (d: (typeof all)[number], keys: string[]) => Object.fromEntries(keys.filter((k) => k in d).map((k) => [k, (d as Record<string, unknown>)[k]]));
  const read = (filter: Document, projection: Document, sort: Document = { _id: 1 }) => docs.find(filter, { projection, sort, promoteLongs: false }).toArray();
  const byId = { _id: { $in: ids } };
  // Narrowed: an inclusion of top-level fields, a filter and a sort on top-level fields.
  assert.equal(await read(byId, { n: 1, wide: 1, long: 1, when: 1, oid: 1, text: 1, nothing: 1, nested: 1, missing: 1 }), all.map((d) => ({ ...pick(d, ["_id", "n", "long", "when", "oid", "text", "nothing", "nested"]), wide: d.wide.valueOf() })));
  assert.equal(await read(byId, { _id: 0, flag: true, list: 1 }), all.map((d) => pick(d, ["flag", "list"])));
  assert.equal(await read({ n: { $gte: 140 } }, { text: 1 }, { n: -1 }), all.slice(140).reverse().map((d) => pick(d, ["_id", "text"])));
  assert.equal(await read({ flag: true, n: { $lt: 6 } }, { n: 1 }), [0, 2, 4].map((i) => ({ _id: all[i]!._id, n: i })));
  // Not narrowed (whole documents decoded, then projected): an exclusion, a dotted path, a
  // dotted or `$` filter.
  assert.equal(await read({ _id: "d001" }, { nested: 0, list: 0, jobs: 0, wide: 0, long: 0 }), [pick(all[1]!, ["_id", "n", "when", "oid", "text", "flag", "nothing"])]);
  assert.equal(await read({ _id: "d001" }, { "nested.a": 1 }), [{ _id: "d001", nested: { a: all[1]!.nested.a } }]);
  assert.equal(await read({ "nested.empty": {}, n: 3 }, { n: 1 }), [{ _id: "d003", n: 3 }]);
  assert.equal(await read({ $or: [{ n: 3 }, { n: 4 }] }, { text: 1 }), [3, 4].map((i) => pick(all[i]!, ["_id", "text"])));
  // Every document of a long list in one answer, narrowed.
  assert.equal((await findByIds(docs, ids, { projection: { n: 1 } })).map((d) => d.n).sort((a, b) => a - b), all.map((d) => d.n));
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

// The proxy's cache of reads by _id (tools/embedded-db/readcache.go): what one client changes,
// the next read of another sees, whatever the kind of write. Each document is read before each
// change (so that its answer is kept) and after it. A small budget makes entries come and go.
const c = suite<{ dir: string; db: EmbeddedDb; reader: MongoClient; writer: MongoClient }>("embedded database read cache");

c.before(async (ctx) => {
  ctx.dir = await mkdtemp(path.join(os.tmpdir(), "meter-edb-cache-"));
  ctx.db = await startEmbeddedDb(ctx.dir, { flags: ["-read-cache-mb", "1"] });
  ctx.reader = await connectMongo(ctx.db.url);
  ctx.writer = await connectMongo(ctx.db.url);
});
c.after(async (ctx) => {
  await ctx.reader.close();
  await ctx.writer.close();
  await ctx.db.stop();
  await rm(ctx.dir, { recursive: true, force: true });
});

type Doc = { _id: string | ObjectId; n?: number; m?: number; k?: number };

c("a read by _id sees every kind of write made through another client at once", async ({ reader, writer }) => {
  const r = reader.db("cached").collection<Doc>("docs");
  const w = writer.db("cached").collection<Doc>("docs");
  /** Reads `id` twice through the reader (the second from the cache, when kept) and checks both. */
  const reads = async (id: Doc["_id"], expected: Doc | null, what: string) => {
    for (let i = 0; i < 2; i++) assert.equal(await r.findOne({ _id: id }), expected, what);
  };
  await reads("x", null, "missing");
  await w.insertOne({ _id: "x", n: 1 });
  await reads("x", { _id: "x", n: 1 }, "insertOne of a document read as missing");
  await w.updateOne({ _id: "x" }, { $inc: { n: 1 } });
  await reads("x", { _id: "x", n: 2 }, "updateOne by _id");
  await w.updateOne({ _id: "x", n: { $lt: 10 } }, { $inc: { n: 1 } });
  await reads("x", { _id: "x", n: 3 }, "updateOne by _id and more");
  await w.updateMany({ n: { $gt: 0 } }, { $inc: { n: 10 } });
  await reads("x", { _id: "x", n: 13 }, "updateMany by another field");
  await w.updateMany({ _id: { $in: ["x", "y"] } }, { $set: { m: 1 } });
  await reads("x", { _id: "x", n: 13, m: 1 }, "updateMany by a list of _ids");
  await w.findOneAndUpdate({ _id: "x" }, { $set: { k: 1 } });
  await reads("x", { _id: "x", n: 13, m: 1, k: 1 }, "findOneAndUpdate");
  await w.replaceOne({ _id: "x" }, { n: 0 });
  await reads("x", { _id: "x", n: 0 }, "replaceOne");
  await reads("y", null, "missing");
  await w.updateOne({ _id: "y" }, { $set: { k: 2 } }, { upsert: true });
  await reads("y", { _id: "y", k: 2 }, "upsert by _id");
  await reads("z", null, "missing");
  await w.updateOne({ k: 3 }, { $setOnInsert: { _id: "z" } }, { upsert: true });
  await reads("z", { _id: "z", k: 3 }, "upsert whose _id is not in the filter");
  await w.deleteOne({ _id: "y" });
  await reads("y", null, "deleteOne");
  await w.deleteMany({ n: 0 });
  await reads("x", null, "deleteMany by another field");
  const oid = new ObjectId();
  await reads(oid, null, "missing ObjectId");
  await w.bulkWrite([{ insertOne: { document: { _id: oid, n: 1 } } }, { updateOne: { filter: { _id: oid }, update: { $inc: { n: 1 } } } }]);
  await reads(oid, { _id: oid, n: 2 }, "bulkWrite with an ObjectId _id");
  assert.equal(await r.findOne({ _id: oid }, { projection: { n: 0 } }), { _id: oid }, "a projection is answered by the database");
  await reads(oid, { _id: oid, n: 2 }, "a projection does not stand for the whole document");
  await writer.db("cached").dropDatabase();
  await reads(oid, null, "dropDatabase");
});

c("a read of a short _id list sees a write to any of its documents at once", async ({ reader, writer }) => {
  const r = reader.db("listed").collection<Doc>("docs");
  const w = writer.db("listed").collection<Doc>("docs");
  /** Reads `ids` twice through the reader (the second from the cache, when kept) and checks both, in _id order. */
  const reads = async (ids: string[], expected: Doc[], what: string) => {
    for (let i = 0; i < 2; i++) {
      const docs = (await r.find({ _id: { $in: ids } }).toArray()).sort((x, y) => String(x._id).localeCompare(String(y._id)));
      assert.equal(docs, expected, what);
    }
  };
  await reads(["a", "b"], [], "both missing");
  await w.insertOne({ _id: "a", n: 1 });
  await reads(["a", "b"], [{ _id: "a", n: 1 }], "insert of the first");
  await reads(["b", "a"], [{ _id: "a", n: 1 }], "the same list in another order");
  await w.updateOne({ _id: "b" }, { $set: { n: 2 } }, { upsert: true });
  await reads(["a", "b"], [{ _id: "a", n: 1 }, { _id: "b", n: 2 }], "upsert of the second");
  await reads(["b", "a"], [{ _id: "a", n: 1 }, { _id: "b", n: 2 }], "upsert of the second, other order");
  await reads(["a", "b", "c"], [{ _id: "a", n: 1 }, { _id: "b", n: 2 }], "a longer list");
  await w.updateOne({ _id: "a" }, { $inc: { n: 1 } });
  await reads(["a", "b"], [{ _id: "a", n: 2 }, { _id: "b", n: 2 }], "update of one by _id");
  await reads(["a", "b", "c"], [{ _id: "a", n: 2 }, { _id: "b", n: 2 }], "update of one by _id, the longer list");
  await w.updateMany({ n: { $gt: 0 } }, { $inc: { n: 10 } });
  await reads(["a", "b"], [{ _id: "a", n: 12 }, { _id: "b", n: 12 }], "updateMany by another field");
  await w.insertOne({ _id: "c", n: 3 });
  await reads(["a", "b", "c"], [{ _id: "a", n: 12 }, { _id: "b", n: 12 }, { _id: "c", n: 3 }], "insert of a third listed");
  await w.deleteOne({ _id: "b" });
  await reads(["a", "b"], [{ _id: "a", n: 12 }], "deleteOne");
  await reads(["a", "b", "c"], [{ _id: "a", n: 12 }, { _id: "c", n: 3 }], "deleteOne, the longer list");
  assert.equal(await r.findOne({ _id: "a" }), { _id: "a", n: 12 }, "the single read beside the lists");
  // A bounded read of a list holds some of it only: never the answer of the whole list.
  assert.is((await r.find({ _id: { $in: ["a", "c"] } }).limit(1).toArray()).length, 1);
  assert.ok(["a", "c"].includes(String((await r.findOne({ _id: { $in: ["a", "c"] } }))!._id)));
  assert.is((await r.find({ _id: { $in: ["a", "c"] } }).toArray()).length, 2, "after a limit");
  assert.is((await r.find({ _id: { $in: ["a", "c"] } }).toArray()).length, 2, "after a limit, again");
  assert.is((await r.find({ _id: { $in: ["a", "c"] } }).limit(1).toArray()).length, 1, "a limit after the whole list");
});

c("reads racing writes never keep an answer from before a write", async ({ reader, writer }) => {
  const r = reader.db("racing").collection<Doc>("docs");
  const w = writer.db("racing").collection<Doc>("docs");
  await w.insertMany(Array.from({ length: 5 }, (_, i) => ({ _id: `d${i}`, n: 0 })));
  let stop = false;
  // Readers keep asking for every document while the writer changes them.
  const noise = Promise.all(
    Array.from({ length: 4 }, async () => {
      while (!stop) for (let i = 0; i < 5; i++) await Promise.all([r.findOne({ _id: `d${i}` }), r.find({ _id: { $in: [`d${i}`, `d${(i + 1) % 5}`] } }).toArray()]);
    }),
  );
  const listed = async (id: string) => (await r.find({ _id: { $in: [id, "none"] } }).toArray())[0]!.n;
  try {
    for (let n = 1; n <= 100; n++) {
      const id = `d${n % 5}`;
      const before = (await r.findOne({ _id: id }))!.n!;
      assert.is(await listed(id), before, `${id} read in a list before write ${n}`);
      await w.updateOne({ _id: id }, { $inc: { n: 1 } });
      assert.is((await r.findOne({ _id: id }))!.n, before + 1, `${id} after write ${n}`);
      assert.is(await listed(id), before + 1, `${id} read in a list after write ${n}`);
    }
    await Promise.all(Array.from({ length: 50 }, () => w.updateOne({ _id: "d0" }, { $inc: { n: 1 } })));
  } finally {
    stop = true;
    await noise;
  }
  assert.is((await r.findOne({ _id: "d0" }))!.n, 20 + 50, "every concurrent $inc is seen");
});

c("documents leave the cache within its budget and come back right", async ({ reader, writer }) => {
  const r = reader.db("budget").collection<Doc & { pad: string }>("docs");
  const w = writer.db("budget").collection<Doc & { pad: string }>("docs");
  const pad = "p".repeat(2048);
  const ids = Array.from({ length: 1500 }, (_, i) => `d${i}`); // 3 MB of answers for a 1 MB cache
  await w.insertMany(ids.map((_id, n) => ({ _id, n, pad })));
  for (let round = 0; round < 2; round++) for (const [n, id] of ids.entries()) assert.is((await r.findOne({ _id: id }))!.n, n);
  await w.updateMany({}, { $inc: { n: 1 } });
  for (const [n, id] of ids.entries()) assert.is((await r.findOne({ _id: id }))!.n, n + 1, id);
});

c.run();

// The build's housekeeping in tools/embedded-db/bin, on a directory of its own.
const test = suite("embedded database build copies");

test("copies of earlier patches go once untouched for an hour; the current one and recent ones stay", async () => {
  const bin = await mkdtemp(path.join(os.tmpdir(), "meter-edb-bin-"));
  try {
    const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000);
    for (const name of ["ferretdb-v1-old", "ferretdb-v1-old.123.tmp", "ferretdb-v1-recent", "ferretdb-v1-current", "embedded-db"]) await mkdir(path.join(bin, name));
    for (const name of ["ferretdb-v1-old", "ferretdb-v1-old.123.tmp", "ferretdb-v1-current", "embedded-db"]) await utimes(path.join(bin, name), hoursAgo(2), hoursAgo(2));
    await removeOldCopies(bin, path.join(bin, "ferretdb-v1-current"));
    assert.equal((await readdir(bin)).sort(), ["embedded-db", "ferretdb-v1-current", "ferretdb-v1-recent"]);
  } finally {
    await rm(bin, { recursive: true, force: true });
  }
});
test.run();
