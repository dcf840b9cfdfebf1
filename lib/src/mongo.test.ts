import { suite } from "uvu";
import * as assert from "uvu/assert";
import net from "node:net";
import { MongoClient } from "mongodb";
import { testMongoUrl } from "../../test/support/database.ts";
import { connectMongo, deleteInRounds, findByIds, insertIgnoringDuplicates, isDuplicateKeyError, takeLease } from "./mongo.ts";

// Every exactly-once rule of the services rests on these guarantees of MongoDB; the test
// database (the embedded FerretDB behind its serializing proxy, or MongoDB) must give them too.
const t = suite<{ mongo: MongoClient }>("database guarantees the services rely on");

t.before(async (ctx) => {
  ctx.mongo = await connectMongo(await testMongoUrl());
});
t.after(async (ctx) => {
  await ctx.mongo.close();
});

t("parallel $inc on one document loses nothing", async ({ mongo }) => {
  const c = mongo.db(`guarantees_${Date.now()}`).collection<{ _id: string; n: number }>("c");
  await c.insertOne({ _id: "k", n: 0 });
  await Promise.all(Array.from({ length: 50 }, () => c.updateOne({ _id: "k" }, { $inc: { n: 1 } })));
  assert.is((await c.findOne({ _id: "k" }))!.n, 50);
});

// The embedded database keeps its finds, inserts and updates prepared per connection: a
// collection dropped and made again must read and change its new documents, never the old.
t("a collection dropped and made again reads, updates and refuses duplicates as a new one", async ({ mongo }) => {
  const c = mongo.db(`guarantees_${Date.now()}`).collection<{ _id: string; n: number }>("c");
  const ids = Array.from({ length: 20 }, (_, i) => `k${i}`);
  for (const round of [1, 2, 3]) {
    await c.insertMany(ids.map((_id) => ({ _id, n: round })));
    await Promise.all(ids.map((_id) => c.updateOne({ _id }, { $inc: { n: 10 } })));
    const read = await Promise.all(ids.map((_id) => c.findOne({ _id })));
    assert.equal(read.map((d) => d?.n), ids.map(() => round + 10), `round ${round}`);
    const dup = await c.insertOne({ _id: "k0", n: 0 }).catch((e: unknown) => e);
    assert.ok(isDuplicateKeyError(dup), `round ${round}: a second k0 is a duplicate`);
    await c.drop();
  }
});

t("of parallel conditional updates, exactly one matches", async ({ mongo }) => {
  const c = mongo.db(`guarantees_${Date.now()}`).collection<{ _id: string; owner: string | null }>("c");
  await c.insertOne({ _id: "job", owner: null });
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      c.findOneAndUpdate({ _id: "job", owner: null }, { $set: { owner: `w${i}` } }, { returnDocument: "after" }),
    ),
  );
  assert.is(results.filter((r) => r !== null).length, 1);
});

t("a unique index admits one of many parallel inserts, and violations read as duplicates", async ({ mongo }) => {
  const c = mongo.db(`guarantees_${Date.now()}`).collection<{ k: string; v?: number }>("c");
  await c.createIndex({ k: 1 }, { unique: true });
  const outcomes = await Promise.allSettled(Array.from({ length: 20 }, () => c.insertOne({ k: "same" })));
  assert.is(outcomes.filter((o) => o.status === "fulfilled").length, 1);
  for (const o of outcomes) if (o.status === "rejected") assert.ok(isDuplicateKeyError(o.reason));
  await c.insertOne({ k: "other" });
  const err = await c.updateOne({ k: "other" }, { $set: { k: "same" } }).catch((e) => e);
  assert.ok(isDuplicateKeyError(err), String(err));
});

// A long list comes back in one answer (no getMore); a short one is sent without a batch size,
// which the embedded database's read cache keeps answers of (a user's counter and window document).
t("findByIds reads a long list in one answer and a short one as a plain find; absent ids are left out", async () => {
  const mongo = await new MongoClient(await testMongoUrl(), { monitorCommands: true }).connect();
  try {
    const c = mongo.db(`guarantees_${Date.now()}`).collection<{ _id: string; n: number }>("c");
    await c.insertMany(Array.from({ length: 300 }, (_, i) => ({ _id: `k${i}`, n: i })));
    const sent: { name: string; batchSize?: unknown }[] = [];
    mongo.on("commandStarted", (e) => sent.push({ name: e.commandName, batchSize: e.command.batchSize }));
    const long = await findByIds(c, [...Array.from({ length: 300 }, (_, i) => `k${i}`), "absent"]);
    assert.equal(long.map((d) => d.n).sort((a, b) => a - b), Array.from({ length: 300 }, (_, i) => i));
    assert.equal(sent, [{ name: "find", batchSize: 301 }], "one find, no getMore");
    sent.length = 0;
    const short = await findByIds(c, ["k1", "k2", "absent"]);
    assert.equal(short.map((d) => d.n).sort(), [1, 2]);
    assert.equal(sent, [{ name: "find", batchSize: undefined }]);
  } finally {
    await mongo.close();
  }
});

t("deleteInRounds removes more documents than one SQLite statement can name, and only those", async ({ mongo }) => {
  const c = mongo.db(`guarantees_${Date.now()}`).collection<{ _id: number; old: boolean }>("c");
  // 33,000 matching: past the 32,766 variables at which one deleteMany fails on the embedded database.
  const docs = Array.from({ length: 33_100 }, (_, i) => ({ _id: i, old: i < 33_000 }));
  for (let i = 0; i < docs.length; i += 10_000) await c.insertMany(docs.slice(i, i + 10_000));
  assert.is(await deleteInRounds(c, { old: true }), 33_000);
  assert.is(await c.countDocuments({}), 100);
  assert.is(await c.countDocuments({ old: true }), 0);
  assert.is(await deleteInRounds(c, { old: true }), 0);
});

t("takeLease: one of parallel takers holds a key; a hold that ended is taken over, a live one is not", async ({ mongo }) => {
  const c = mongo.db(`guarantees_${Date.now()}`).collection<{ _id: string; who: string; till: Date }>("leases");
  const fields = { holder: "who", until: "till" };
  const at = new Date("2026-01-01T00:00:00Z");
  const tokens = await Promise.all(Array.from({ length: 10 }, () => takeLease(c, "k", 1_000, fields, () => at)));
  const held = tokens.filter((x) => x !== null);
  assert.is(held.length, 1);
  assert.equal(await c.findOne({ _id: "k" }), { _id: "k", who: held[0]!, till: new Date(at.getTime() + 1_000) });
  // Still held 999 ms later; taken over once its hold has ended.
  assert.is(await takeLease(c, "k", 1_000, fields, () => new Date(at.getTime() + 999)), null);
  const later = await takeLease(c, "k", 1_000, fields, () => new Date(at.getTime() + 1_001));
  assert.ok(later && later !== held[0]);
  assert.is((await c.findOne({ _id: "k" }))!.who, later);
});

/** A TCP relay to the database that, once cut, drops every connection at its next request. */
async function relay(target: URL): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  let cut = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => {});
      s.on("close", () => sockets.delete(s));
    }
    client.on("data", (chunk) => {
      if (cut) {
        client.destroy();
        upstream.destroy();
      } else upstream.write(chunk);
    });
    upstream.on("data", (chunk) => client.write(chunk));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `mongodb://127.0.0.1:${port}/?directConnection=true`,
    cut: () => (cut = true),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

t("insertIgnoringDuplicates rejects an insert whose connection closed before an answer; only duplicates count as stored", async ({ mongo }) => {
  const dbName = `guarantees_${Date.now()}`;
  const r = await relay(new URL(await testMongoUrl()));
  const client = new MongoClient(r.url, { serverSelectionTimeoutMS: 1_000, retryWrites: false });
  try {
    const c = client.db(dbName).collection<{ _id: string }>("c");
    await c.insertOne({ _id: "before" });
    assert.equal([...(await insertIgnoringDuplicates(c, [{ _id: "before" }, { _id: "new" }]))], ["new"]);
    r.cut();
    const err = await insertIgnoringDuplicates(c, [{ _id: "lost-1" }, { _id: "lost-2" }]).then(
      (ids) => new Error(`answered as inserted: ${[...ids].join(", ")}`),
      (e: Error) => e,
    );
    assert.not.match(err.message, /answered as inserted/);
    const stored = await mongo.db(dbName).collection<{ _id: string }>("c").find({}).sort({ _id: 1 }).toArray();
    assert.equal(stored.map((d) => d._id), ["before", "new"], "the cut insert stored nothing");
  } finally {
    await client.close().catch(() => {});
    await r.close();
  }
});

t.run();
