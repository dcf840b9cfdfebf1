// The plans service's user cache (store/user-cache.ts) against the real database: two
// UserStores on one database are two replicas of the service.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { randomUUID } from "node:crypto";
import { BSON, type Db, type MongoClient } from "mongodb";
import { createLogger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { testMongoUrl } from "../../test/support/database.ts";
import { eventually } from "../../test/support/eventually.ts";
import { UserStore, userKey } from "./store/users.ts";

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

t("a change through another replica shows within about a second", async ({ db }) => {
  const productId = randomUUID();
  const here = replica(db);
  const elsewhere = replica(db);
  elsewhere.cache.start();
  try {
    await here.insert(productId, "bo", null);
    await here.appendSubscription(productId, "bo", entry("free"));
    assert.is(await planOf(elsewhere, productId, "bo"), "free");
    await here.appendSubscription(productId, "bo", entry("pro"));
    // Polled every 500 ms; the bound is generous for a busy machine, and far below the 10-minute backstop.
    await eventually(async () => (await planOf(elsewhere, productId, "bo")) === "pro", 10_000, "the other replica to see the change");
  } finally {
    await elsewhere.cache.stop();
  }
});

t("a read under way when its user changes is not kept", async ({ db }) => {
  const productId = randomUUID();
  const here = replica(db);
  await here.insert(productId, "cy", null);
  await here.appendSubscription(productId, "cy", entry("free"));
  const key = userKey(productId, "cy");
  const raw = async () => [BSON.serialize((await db.collection("users").findOne({ _id: key as never }))!) as Buffer];
  // The read fetches the user as it was, then the change lands and returns before the read does.
  const before = await raw();
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const reading = here.cache.read([key], async () => {
    await held;
    return before;
  });
  await here.appendSubscription(productId, "cy", entry("pro"));
  release();
  assert.is((await reading).get(key)!.subscriptions.length, 1, "the racing read answers what it read");
  assert.is(await planOf(here, productId, "cy"), "pro", "but the next read does not get it from memory");
});

t("many users changed in one second (a bulk change) make every replica read every user again", async ({ db }) => {
  const productId = randomUUID();
  const here = replica(db);
  const elsewhere = replica(db);
  const many = Array.from({ length: 150 }, (_, i) => `bulk-${i}`);
  for (const u of ["dee", ...many]) {
    await here.insert(productId, u, u);
    await here.appendSubscription(productId, u, entry("free"));
  }
  await elsewhere.cache.poll();
  for (const u of ["dee", ...many]) assert.is(await planOf(elsewhere, productId, u), "free");
  await rename(db, productId, "dee", "renamed");
  assert.is((await elsewhere.get(productId, "dee"))!.name, "dee", "cached");

  // Changes until some second has named 100 users (a slow machine may spread them over seconds).
  const slots = db.collection<{ keys: string[]; n: number }>("user_changes");
  const fullSince = Math.floor(Date.now() / 1000);
  do await Promise.all(many.map((u) => here.appendSubscription(productId, u, entry("pro"))));
  while (!(await slots.findOne({ n: { $gte: 100 }, second: { $gte: fullSince } })));
  assert.ok((await slots.find().toArray()).every((s) => s.keys.length <= 100), "no slot names more than 100 users");

  await elsewhere.cache.poll();
  assert.is((await elsewhere.get(productId, "dee"))!.name, "renamed", "a full second clears the whole cache");
  for (const u of many) assert.is(await planOf(elsewhere, productId, u), "pro");
});

t.run();
