import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Db, MongoClient } from "mongodb";
import { connectMongo } from "@meter/lib/mongo";
import { testMongoUrl } from "../../../test/support/database.ts";
import { WindowDocMove, type StoredBefore } from "./move.ts";
import { WindowStore, type WindowDoc } from "./store.ts";
import { WindowLeaseStore, emptyWindowDoc } from "./lease-store.ts";
import { dimensions } from "./dimensions.ts";
import { limit, plan } from "../testing/plans.ts";

// Users' window documents moved from "windows" (where versions before kept them) into "counters":
// against the real database, the counts, job guards and lease slices arrive once whoever moves
// them (a pass, an access, two replicas at once, a mover that crashed half way), and every access
// of a user's document sees what was counted before the move.
const t = suite<{ mongo: MongoClient; db: Db }>("window documents move into counters");

t.before(async (ctx) => {
  ctx.mongo = await connectMongo(await testMongoUrl());
});
t.before.each((ctx) => {
  ctx.db = ctx.mongo.db(`window_move_${Date.now()}_${Math.floor(Math.random() * 1e6)}`);
});
t.after(async (ctx) => {
  await ctx.mongo.close();
});

const NOW = new Date("2026-03-07T17:00:00Z");
const LIVE = NOW.getTime() + 3_600_000;
const ENDED = NOW.getTime() - 1;

const oldDoc = (user: string, n: number): StoredBefore => ({
  _id: `p|${user}`,
  product_id: "p",
  user_id: user,
  w: { "day|x": { n, e: LIVE }, "minute|y": { n: 7, e: ENDED } },
  jobs: { "job-old": 1 },
  leases: { holder: { expires_at: new Date(LIVE), s: { "day|x": { granted: 5, spent: 1 } } } },
  version: 3,
});

const movers = (db: Db, n: number) =>
  Array.from({ length: n }, () => new WindowDocMove(db.collection<StoredBefore>("windows"), db.collection<WindowDoc>("counters"), () => NOW));

t("a pass moves every document once, with its guards and slices; ended entries stay behind", async ({ db }) => {
  await db.collection<StoredBefore>("windows").insertMany([oldDoc("a", 10), oldDoc("b", 20)]);
  // What a replica of this version counted for a before the move.
  await db.collection<WindowDoc>("counters").insertOne({ _id: "p|w|a", product_id: "p", user_id: "a", w: { "day|x": { n: 2, e: LIVE } }, jobs: {}, version: 1 });
  const [one, two] = movers(db, 2);
  // Two replicas at once: one passing over everything, the other moving a on access.
  await Promise.all([one!.pass(), two!.ensure(["p|w|a", "p|w|b"])]);
  assert.is(await db.collection("windows").countDocuments(), 0, "nothing left behind");
  const a = await db.collection<WindowDoc>("counters").findOne({ _id: "p|w|a" });
  assert.equal(a!.w, { "day|x": { n: 12, e: LIVE } }, "added to what was there, once; the ended minute left out");
  assert.ok(a!.jobs["job-old"], "a job counted before the move is not counted again");
  assert.equal(a!.leases?.holder?.s?.["day|x"], { granted: 5, spent: 1 });
  assert.is(Number(a!.version), 5, "a grant computed before the move does not land");
  const b = await db.collection<WindowDoc>("counters").findOne({ _id: "p|w|b" });
  assert.equal(b!.w, { "day|x": { n: 20, e: LIVE } });
  assert.is(b!.user_id, "b");
  assert.is(await one!.pass(), true, "the next pass finds nothing");
});

t("a team's document moves beside the team's counters, owner and all", async ({ db }) => {
  const { user_id: _, ...rest } = oldDoc("t1", 4);
  await db.collection<StoredBefore>("team_windows").insertOne({ ...rest, team_id: "t1" } as StoredBefore);
  const move = new WindowDocMove(db.collection<StoredBefore>("team_windows"), db.collection<WindowDoc>("team_counters"), () => NOW, undefined, "team_id");
  const store = new WindowStore(db, "team_counters", "team_id", move);
  const doc = (await store.get("p|w|t1")) as (WindowDoc & { team_id?: string }) | null;
  assert.equal(doc!.w, { "day|x": { n: 4, e: LIVE } });
  assert.is(doc!.team_id, "t1");
  assert.is(await db.collection("team_windows").countDocuments(), 0);
});

t("a mover that crashed after adding is finished without adding again", async ({ db }) => {
  const [first, second] = movers(db, 2);
  await db.collection<StoredBefore>("windows").insertOne(oldDoc("c", 10));
  await first!.pass();
  // As if the delete had not happened: the same document, under the same move, back in place.
  const moved = await db.collection<WindowDoc>("counters").findOne({ _id: "p|w|c" });
  const moveId = Object.keys(moved!.jobs).find((j) => j.startsWith("move-"))!.slice("move-".length);
  await db.collection<StoredBefore>("windows").insertOne({ ...oldDoc("c", 10), move_id: moveId });
  await second!.pass();
  assert.is(await db.collection("windows").countDocuments(), 0);
  assert.equal((await db.collection<WindowDoc>("counters").findOne({ _id: "p|w|c" }))!.w, { "day|x": { n: 10, e: LIVE } });
});

t("before any pass, the stores move a user's document on access: reads, counting, a lease", async ({ db }) => {
  const [move] = movers(db, 1);
  const store = new WindowStore(db, "counters", "user_id", move);
  await db.collection<StoredBefore>("windows").insertMany([oldDoc("d", 10), oldDoc("e", 20), oldDoc("f", 30)]);
  assert.equal((await store.get("p|w|d"))!.w, { "day|x": { n: 10, e: LIVE } }, "read");
  const counter = { _id: "p|2026-03-01T00:00:00.000Z|e", cost_nano: 1 };
  await db.collection("counters").insertOne(counter as never);
  const both = await store.getWith<typeof counter>("p|w|e", counter._id);
  assert.equal(both.windows!.w, { "day|x": { n: 20, e: LIVE } }, "read with the counter");
  assert.is(both.other!.cost_nano, 1);
  // Counting: the old job's guard moved with it, a new job adds.
  const add = (job: string) => store.add(job, [{ id: "p|w|f", productId: "p", userId: "f", add: new Map([["day|x", { key: "day|x", end: LIVE, n: 1 }]]), unleased: true }], NOW);
  await add("job-old");
  await add("job-new");
  assert.equal((await store.get("p|w|f"))!.w?.["day|x"], { n: 31, e: LIVE });
  // A lease: the release of a slice granted before the move finds it.
  await db.collection<StoredBefore>("windows").insertOne(oldDoc("g", 10));
  const leases = new WindowLeaseStore(store.windows, emptyWindowDoc(), move);
  const released = await leases.release("p|w|g", "holder", { "day|x": 1 });
  assert.equal(released?.s?.["day|x"], { granted: 1, spent: 1 });
  assert.is(await db.collection("windows").countDocuments(), 0);
});

t("a document whose entries had all ended moves with no counts: its limits read 0 used", async ({ db }) => {
  const [move] = movers(db, 1);
  const store = new WindowStore(db, "counters", "user_id", move);
  await db.collection<StoredBefore>("windows").insertOne({ ...oldDoc("h", 0), w: { "day|x": { n: 4, e: ENDED } } });
  const doc = await store.get("p|w|h");
  assert.ok(doc, "moved on access");
  assert.is(doc!.w, undefined, "ended entries do not move, and nothing else creates the field");
  const period = { start: new Date("2026-03-01T00:00:00Z"), end: new Date("2026-04-01T00:00:00Z") };
  const [daily] = dimensions(plan("p", [limit("daily", { window: "day" })]), period, null, doc, NOW).filter((d) => d.reason === "limit:daily");
  assert.is(daily!.used, 0);
});

t.run();
