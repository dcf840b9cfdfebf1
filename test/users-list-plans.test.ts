// Listing users with a product's plans at their bound (1 MiB together): the listing reads the
// names of the page's plans, never every plan with its maps. The plans service runs on a
// database client of the test's own that records every command it sends.
import { randomBytes } from "node:crypto";
import { MongoClient, type CommandStartedEvent, type Document } from "mongodb";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { testMongoUrl } from "./support/database.ts";
import { startTestStack, type TestStack } from "./support/stack.ts";

const t = suite<{ stack: TestStack; mongo: MongoClient; finds: Document[] }>("users listing with plans at their bound");

t.before(async (ctx) => {
  ctx.mongo = new MongoClient(await testMongoUrl(), { monitorCommands: true });
  await ctx.mongo.connect();
  ctx.finds = [];
  ctx.mongo.on("commandStarted", (e: CommandStartedEvent) => {
    if (e.commandName === "find" && e.command.find === "plans") ctx.finds.push(e.command);
  });
  const dbPrefix = `t${randomBytes(5).toString("hex")}`;
  ctx.stack = await startTestStack({ dbPrefix, services: { plans: { db: ctx.mongo.db(`${dbPrefix}_plans`) } } });
});
t.after(async (ctx) => {
  await ctx.stack?.close();
  await ctx.mongo?.close();
});

/** `count` map keys of 255 characters. */
const keys = (name: string, count: number) => Array.from({ length: count }, (_, i) => `${name}-${String(i).padStart(4, "0")}-`.padEnd(255, "x"));

const MAPS = ["cost_rates", "model_limits", "tool_costs"];
/** Whether a find reads plans with their maps (no projection, or one that keeps a map). */
const readsMaps = (find: Document) => !find.projection || MAPS.some((m) => find.projection[m]);
const idsOf = (find: Document): string[] => find.filter?._id?.$in ?? (typeof find.filter?._id === "string" ? [find.filter._id] : ["(not by id)"]);

t("GET /users reads only the names of the page's plans", async ({ stack, finds }) => {
  const { api } = await stack.newProduct();
  // At the bound: three plans of about 280 KB, one of about 160 KB, and small ones (about 1 MB).
  const large = ["large-0", "large-1", "large-2"].map((name) => ({
    name,
    cost_rates: Object.fromEntries(keys(name, 1000).map((k) => [k, { input: 1, output: 2 }])),
  }));
  const filler = { name: "filler", tool_costs: Object.fromEntries(keys("filler", 600).map((k) => [k, 0.5])) };
  for (const plan of [...large, filler]) assert.is((await api.post("/config/plans", { plans: [plan] })).status, 201);
  const small = (await api.post("/config/plans", { plans: Array.from({ length: 46 }, (_, i) => ({ name: `small-${i}`, max_spend_per_session: 1 })) })).body.plans;
  const plans = (await api.get("/config/plans")).body.plans as { id: string; name: string }[];
  assert.is(plans.length, 50);
  const over = await api.post("/config/plans", { plans: [{ name: "one-more", tool_costs: Object.fromEntries(keys("more", 200).map((k) => [k, 0.5])) }] });
  assert.is(over.status, 422, "the product's plans are at their bound");

  // Users on the small plans only: the large ones are nobody's on the page.
  const users = Array.from({ length: 60 }, (_, i) => `user-${String(i).padStart(3, "0")}`);
  for (const [i, id] of users.entries()) {
    assert.is((await api.post("/users", { external_user_id: id })).status, 201);
    assert.is((await api.post(`/users/${id}/subscription`, { plan_id: small[i % 10].id })).status, 200);
  }
  const referenced = new Set(small.slice(0, 10).map((p: { id: string }) => p.id));
  const large_ids = new Set(plans.filter((p) => p.name.startsWith("large") || p.name === "filler").map((p) => p.id));

  const largeId = plans.find((p) => p.name === "large-0")!.id;
  for (const [i, query] of ["?limit=50&plan=small-3", "?limit=50", "?limit=50&plan=small-3", "?limit=50"].entries()) {
    // A plan nobody on the page is on changes: no listing of the plans kept from before helps.
    assert.is((await api.patch(`/config/plans/${largeId}`, { max_spend_per_session: i + 1 })).status, 200);
    finds.length = 0;
    const started = performance.now();
    const res = await api.get(`/users${query}`);
    const ms = performance.now() - started;
    assert.is(res.status, 200, JSON.stringify(res.body).slice(0, 300));
    console.log(`  GET /users${query}: ${res.body.users.length} users in ${ms.toFixed(0)} ms; plan reads: ${finds.length}, with maps: ${finds.filter(readsMaps).length}`);
    assert.ok(res.body.users.length > 0);
    for (const u of res.body.users) assert.match(u.plan_name, /^small-\d$/);
    const withMaps = finds.filter(readsMaps).flatMap(idsOf);
    assert.ok(withMaps.every((id) => referenced.has(id)), `plans read with their maps beyond the page's: ${withMaps.filter((id) => !referenced.has(id)).join(", ")}`);
    assert.not.ok(
      withMaps.some((id) => large_ids.has(id)),
      "a large plan nobody on the page is on was read",
    );
  }
});

t.run();
