import { connectMongo } from "@meter/lib/mongo";
import { testMongoUrl, stopTestDatabase } from "../../../test/support/database.ts";
const client = await connectMongo(await testMongoUrl());
const c = client.db("probe_" + Date.now()).collection<any>("c");
// 1) $inc from many concurrent writers: lost updates?
await c.insertOne({ _id: "k", n: 0, v: 0 });
await Promise.all(Array.from({ length: 50 }, () => c.updateOne({ _id: "k" }, { $inc: { n: 1 } })));
console.log("inc", (await c.findOne({ _id: "k" }))!.n);
// 2) guarded CAS: how many succeed from the same version?
const results = await Promise.all(Array.from({ length: 20 }, () => c.updateOne({ _id: "k", v: 0 }, { $inc: { v: 1 } })));
console.log("cas winners", results.filter((r) => r.modifiedCount === 1).length, (await c.findOne({ _id: "k" }))!.v);
// 3) concurrent unsets of different fields
const docs = Array.from({ length: 200 }, (_, i) => ({ _id: `e${i}`, a: true, b: true }));
await c.insertMany(docs);
const ids = docs.map((d) => d._id);
await Promise.all([c.updateMany({ _id: { $in: ids } }, { $unset: { a: "" } }), c.updateMany({ _id: { $in: ids } }, { $unset: { b: "" } })]);
console.log("left a", await c.countDocuments({ a: true }), "left b", await c.countDocuments({ b: true }));
await client.close(); await stopTestDatabase();
