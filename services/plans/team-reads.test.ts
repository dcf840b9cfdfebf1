// Every read and write of teams and membership is by `_id` (an equality, a list or a range):
// the embedded database answers nothing else from an index, so any other filter would read
// every user or team of every product. The service runs on a database client of the test's own
// that records the commands it sends.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { MongoClient, type CommandStartedEvent, type Document } from "mongodb";
import { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { createLogger } from "@meter/lib/logger";
import { rpcClient, serveRpc } from "@meter/lib/rpc";
import { testMongoUrl } from "../../test/support/database.ts";
import { createPlansService } from "./index.ts";
import { NO_PEERS, jan, product, type PlansSuite } from "./testing/suite.ts";

const COLLECTIONS = new Set(["teams", "team_members", "team_member_counts", "users"]);

const t = suite<PlansSuite & { recorded: Document[] }>("team reads and writes by _id");

t.before(async (ctx) => {
  ctx.recorded = [];
  ctx.mongo = new MongoClient(await testMongoUrl(), { monitorCommands: true });
  await ctx.mongo.connect();
  ctx.mongo.on("commandStarted", (e: CommandStartedEvent) => {
    const collection = e.command[e.commandName];
    if (typeof collection === "string" && COLLECTIONS.has(collection)) ctx.recorded.push({ command: e.commandName, collection, body: e.command });
  });
  ctx.dbName = `plans_team_reads_${Date.now()}`;
  const logger = createLogger("plans-test", "silent");
  // No user cache: every read reaches the database, where it is recorded.
  const module = await createPlansService({ db: ctx.mongo.db(ctx.dbName), logger, peers: NO_PEERS, userCacheBytes: 0 });
  ctx.server = await serveRpc({ modules: [module], port: 0, logger });
  ctx.client = rpcClient(PlansService, ctx.server.url);
});
t.after(async (ctx) => {
  await ctx.server.close();
  await ctx.mongo.close();
});

/** The filters of a command: a find's, each update's, each delete's, a findAndModify's query. */
function filtersOf(c: Document): Document[] {
  const b = c.body;
  if (c.command === "find") return [b.filter ?? {}];
  if (c.command === "findAndModify") return [b.query ?? {}];
  if (c.command === "update") return (b.updates ?? []).map((u: Document) => u.q ?? {});
  if (c.command === "delete") return (b.deletes ?? []).map((d: Document) => d.q ?? {});
  return [];
}

t("creating, listing, subscribing, joining, moving, listing members and resolving read and write by _id only", async ({ client, recorded }) => {
  const productId = product();
  const [plan] = (await client.createPlans({ productId, plans: [{ name: "team", maxSpendPerPeriod: 5 }] })).plans;
  recorded.length = 0;
  for (const id of ["acme", "beta"]) await client.createTeam({ productId, externalTeamId: id, name: id });
  await client.setTeamSubscription({ productId, externalTeamId: "acme", planId: plan!.id, ...jan });
  for (const id of ["u1", "u2"]) {
    await client.createUser({ productId, externalUserId: id });
    await client.setUserTeam({ productId, externalUserId: id, externalTeamId: "acme" });
  }
  await client.setUserTeam({ productId, externalUserId: "u2", externalTeamId: "beta" });
  await client.setUserTeam({ productId, externalUserId: "u2" });
  await client.listTeams({ productId, prefix: "a", limit: 1 });
  await client.getTeam({ productId, externalTeamId: "acme" });
  await client.listTeamMembers({ productId, externalTeamId: "acme" });
  await client.resolveUsers({ productId, externalUserIds: ["u1", "u2"] });
  await client.resolveTeams({ productId, externalTeamIds: ["acme", "beta"] });

  const seen = new Set(recorded.map((c) => c.collection));
  for (const c of COLLECTIONS) assert.ok(seen.has(c), `${c} was used`);
  for (const c of recorded) {
    for (const f of filtersOf(c)) {
      assert.ok("_id" in f, `${c.command} on ${c.collection} filters by _id: ${JSON.stringify(f)}`);
    }
  }
});

t.run();
