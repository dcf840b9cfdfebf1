// The plans service's user cache (store/user-cache.ts) against the real database: two
// UserStores on one database are two replicas of the service.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { randomUUID } from "node:crypto";
import { BSON, type Db, type MongoClient } from "mongodb";
import { createLogger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { testMongoUrl } from "../../../test/support/database.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { UserStore, userKey } from "./users.ts";

const t = suite<{ mongo: MongoClient; db: Db }>("plans user cache");

t.before(async (ctx) => {
  ctx.mongo = await connectMongo(await testMongoUrl());
  ctx.db = ctx.mongo.db(`plans_cache_${Date.now()}`);
});

t.after(async (ctx) => {
  await ctx.mongo.close();
});

const logger = createLogger("plans-cache-test", "silent");
const replica = (db: Db, cacheBytes = 8 << 20) => new UserStore(db, { logger, cacheBytes });
const entry = (plan: string) => ({
  plan_id: plan,
  plan_name: plan,
  billing_subscription_id: null,
  period_start: null,
  period_end: null,
  effective_at: new Date(),
});
const planOf = async (store: UserStore, productId: string, user: string) => (await store.get(productId, user))?.current?.plan_id;

/** Changes the stored user behind every cache's back, so that a read shows where it came from. */
const rename = (db: Db, productId: string, user: string, name: string) =>
  db.collection<{ _id: string; name: string }>("users").updateOne({ _id: userKey(productId, user) }, { $set: { name } });

t("a user read once is answered from memory; this replica's own change shows at once", async ({ db }) => {
  const productId = randomUUID();
  const here = replica(db);
  await here.insert(productId, "ann", "Ann");
  await here.appendSubscription(productId, "ann", entry("free"));
  assert.is((await here.get(productId, "ann"))!.name, "Ann");
  await rename(db, productId, "ann", "changed behind the cache");
  assert.is((await here.get(productId, "ann"))!.name, "Ann", "the second read came from memory");
  assert.is((await here.getMany(productId, ["ann", "nobody"])).length, 1, "a missing user is not invented");

  await here.appendSubscription(productId, "ann", entry("pro"));
  const after = (await here.get(productId, "ann"))!;
  assert.is(after.current!.plan_id, "pro", "the change through this replica shows at once");
  assert.is(after.name, "changed behind the cache", "and the user was read again");
  assert.is(after.subscriptions.length, 2);

  const uncached = replica(db, 0);
  assert.is((await uncached.get(productId, "ann"))!.name, "changed behind the cache");
  await rename(db, productId, "ann", "again");
  assert.is((await uncached.get(productId, "ann"))!.name, "again", "USER_CACHE_MB=0 reads every user from the database");
});

t("a user that does not exist yet is not remembered as missing", async ({ db }) => {
  const productId = randomUUID();
  const here = replica(db);
  const elsewhere = replica(db);
  assert.is(await here.get(productId, "late"), null);
  await elsewhere.insert(productId, "late", null);
  assert.ok(await here.get(productId, "late"), "created through another replica, found at once");
});

/**
 * A user written straight into the collection, as an earlier version or a restore would leave
 * it: nothing names it in user_changes, so only what a test does next can make a cache let go.
 */
async function seedQuietly(db: Db, productId: string, user: string, plan: string): Promise<void> {
  const now = new Date();
  await db.collection<{ _id: string } & Record<string, unknown>>("users").insertOne({
    _id: userKey(productId, user),
    id: randomUUID(),
    product_id: productId,
    external_user_id: user,
    name: user,
    subscriptions: [{ id: randomUUID(), ...entry(plan) }],
    created_at: now,
    updated_at: now,
  });
}

t("a change through another replica shows within about a second, whichever replica's clock runs ahead", async ({ db }) => {
  const productId = randomUUID();
  const elsewhere = replica(db);
  elsewhere.cache.start();
  try {
    for (const [user, skewMs] of [["even", 0], ["ahead", 8_000], ["behind", -8_000]] as const) {
      await seedQuietly(db, productId, user, "free");
      assert.is(await planOf(elsewhere, productId, user), "free");
      const writer = new UserStore(db, { logger, cacheBytes: 8 << 20, now: () => Date.now() + skewMs });
      await writer.appendSubscription(productId, user, entry("pro"));
      // Polled every 500 ms; a reader that waited for its clock to catch up would take 8 s.
      await eventually(async () => (await planOf(elsewhere, productId, user)) === "pro", 5_000, `the other replica to see the change (writer's clock ${skewMs} ms off)`);
    }
  } finally {
    await elsewhere.cache.stop();
  }
});

t("a read under way when its user changes is not kept, nor one that began before and ends after another", async ({ db }) => {
  const productId = randomUUID();
  const here = replica(db);
  await seedQuietly(db, productId, "cy", "free");
  const key = userKey(productId, "cy");
  const raw = async () => [BSON.serialize((await db.collection("users").findOne({ _id: key as never }))!) as Buffer];
  // Two reads fetch the user as it was, then the change lands and returns before they do.
  const before = await raw();
  const held = () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    return { release, read: here.cache.read([key], async () => (await gate, before)) };
  };
  const first = held();
  const second = held();
  await here.appendSubscription(productId, "cy", entry("pro"));
  second.release();
  assert.is((await second.read).get(key)!.subscriptions.length, 1, "the racing read answers what it read");
  first.release();
  await first.read;
  assert.is(await planOf(here, productId, "cy"), "pro", "but neither is kept for the next read");
});

t("a replica that read the user between the naming and the write reads it again at its next poll", async ({ db }) => {
  const productId = randomUUID();
  const here = replica(db);
  const elsewhere = replica(db);
  await seedQuietly(db, productId, "di", "free");
  const key = userKey(productId, "di");
  assert.is(await planOf(elsewhere, productId, "di"), "free");
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const changing = here.cache.change(key, async () => {
    await gate;
    await db.collection<{ _id: string; subscriptions: object[] }>("users").updateOne({ _id: key }, { $push: { subscriptions: { id: randomUUID(), ...entry("pro") } } });
  });
  await eventually(() => db.collection("user_changes").findOne({ keys: key }), 5_000, "the change to be named");
  await elsewhere.cache.poll();
  assert.is(await planOf(elsewhere, productId, "di"), "free", "read again, still as it was: the write has not landed");
  release();
  await changing;
  await elsewhere.cache.poll();
  assert.is(await planOf(elsewhere, productId, "di"), "pro", "the next poll forgets it again");
});

t("many users changed in one second are named on pages of 100: every replica reads those again and keeps the rest", async ({ db }) => {
  const productId = randomUUID();
  const here = replica(db);
  const elsewhere = replica(db);
  const many = Array.from({ length: 150 }, (_, i) => `bulk-${i}`);
  for (const u of ["dee", ...many]) await seedQuietly(db, productId, u, "free");
  for (const u of ["dee", ...many]) assert.is(await planOf(elsewhere, productId, u), "free");
  await rename(db, productId, "dee", "renamed");
  assert.is((await elsewhere.get(productId, "dee"))!.name, "dee", "cached");

  // Changes (never of dee) until some second has named more than 100 users (its second page
  // started); a slow machine may spread a round over seconds, so a few rounds at most.
  const slots = db.collection<{ _id: string; keys: string[]; n: number; second: number }>("user_changes");
  const since = Math.floor(Date.now() / 1000);
  for (let round = 1; !(await slots.findOne({ _id: { $regex: "\\.1$" }, second: { $gte: since } })); round++) {
    assert.ok(round <= 10, "some second named more than 100 users");
    await Promise.all(many.map((u) => here.appendSubscription(productId, u, entry("pro"))));
  }
  assert.ok((await slots.find().toArray()).every((s) => s.keys.length <= 100), "no page names more than 100 users");

  await elsewhere.cache.poll();
  for (const u of many) assert.is(await planOf(elsewhere, productId, u), "pro", "every user named on any page is read again");
  assert.is((await elsewhere.get(productId, "dee"))!.name, "dee", "a user nobody named stays in memory");
});

t("a second whose every page is full (a bulk change) makes every replica read every user again", async ({ db }) => {
  const productId = randomUUID();
  const elsewhere = replica(db);
  await seedQuietly(db, productId, "eve", "free");
  assert.is(await planOf(elsewhere, productId, "eve"), "free");
  await rename(db, productId, "eve", "renamed");
  assert.is((await elsewhere.get(productId, "eve"))!.name, "eve", "cached");
  // Ten full pages for this second, as a thousand changes in it leave them (eve among none).
  const second = Math.floor(Date.now() / 1000);
  const slots = db.collection<{ _id: string; keys: string[]; n: number; second: number }>("user_changes");
  const keys = (page: number) => Array.from({ length: 100 }, (_, i) => `${productId}|nobody-${page}-${i}`);
  for (let page = 0; page < 10; page++) {
    const _id = page === 0 ? String(second % 600) : `${second % 600}.${page}`;
    await slots.replaceOne({ _id }, { second, keys: keys(page), n: 100 }, { upsert: true });
  }
  await elsewhere.cache.poll();
  assert.is((await elsewhere.get(productId, "eve"))!.name, "renamed", "a full second clears the whole cache");
});

t("a replica nobody reads from stops polling; its next read comes from the database, and polling resumes", async ({ db }) => {
  const productId = randomUUID();
  let skewMs = 0;
  const here = new UserStore(db, { logger, cacheBytes: 8 << 20, now: () => Date.now() + skewMs });
  here.cache.start();
  try {
    await seedQuietly(db, productId, "fay", "free");
    assert.is((await here.get(productId, "fay"))!.name, "fay");
    // Ten seconds and more without a read (the clock moved on).
    skewMs = 11_000;
    await eventually(() => here.cache.resting, 10_000, "the cache to rest");
    // Changed while it rested, and named to nobody: memory must not answer.
    await rename(db, productId, "fay", "changed while resting");
    assert.is((await here.get(productId, "fay"))!.name, "changed while resting", "the first read after the rest is from the database");
    assert.is(here.cache.resting, false, "a read wakes it");
    await eventually(async () => {
      const before = (await here.get(productId, "fay"))!.name;
      await rename(db, productId, "fay", `behind the cache ${randomUUID()}`);
      return (await here.get(productId, "fay"))!.name === before;
    }, 10_000, "memory to answer again once a poll read the ring");
  } finally {
    await here.cache.stop();
  }
});

t("a user read in the last fifth of its time in memory is read again in the background while memory answers", async ({ db }) => {
  const productId = randomUUID();
  let skewMs = 0;
  const here = new UserStore(db, { logger, cacheBytes: 8 << 20, now: () => Date.now() + skewMs });
  await seedQuietly(db, productId, "gus", "free");
  assert.is((await here.get(productId, "gus"))!.name, "gus");
  // Changed and named to nobody (the writer died before naming it): only the TTL's backstop, or a read ahead of it, finds it.
  await rename(db, productId, "gus", "renamed unnamed");
  assert.is((await here.get(productId, "gus"))!.name, "gus", "memory answers");
  // Nine of its ten minutes gone: the read answers at once from memory, and reads it again behind.
  skewMs = 9 * 60_000;
  assert.is((await here.get(productId, "gus"))!.name, "gus", "the read that finds it ageing is answered from memory");
  await eventually(async () => (await here.get(productId, "gus"))!.name === "renamed unnamed", 5_000, "the user read again before its TTL passed");
});

t("a stopped cache answers every user from the database", async ({ db }) => {
  const productId = randomUUID();
  const here = replica(db);
  here.cache.start();
  await seedQuietly(db, productId, "eve", "free");
  assert.is((await here.get(productId, "eve"))!.name, "eve");
  await rename(db, productId, "eve", "renamed");
  assert.is((await here.get(productId, "eve"))!.name, "eve", "cached while polling");
  await here.cache.stop();
  assert.is((await here.get(productId, "eve"))!.name, "renamed");
});

t.run();
