// Membership changes through two replicas of the plans service on one database, each with its
// user cache: a change decides from the user as stored, not as a replica last cached it.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { MongoClient } from "mongodb";
import { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { createLogger } from "@meter/lib/logger";
import { rpcClient, serveRpc, type RpcServer } from "@meter/lib/rpc";
import { testMongoUrl } from "../../test/support/database.ts";
import { createPlansService } from "./index.ts";
import { NO_PEERS, product } from "./testing/suite.ts";

const t = suite<{ mongo: MongoClient; servers: RpcServer[] }>("membership through two replicas");

t.before(async (ctx) => {
  ctx.mongo = await new MongoClient(await testMongoUrl()).connect();
  const db = ctx.mongo.db(`plans_membership_replicas_${Date.now()}`);
  const logger = createLogger("plans-test", "silent");
  ctx.servers = [];
  for (let i = 0; i < 2; i++) {
    const module = await createPlansService({ db, logger, peers: NO_PEERS });
    ctx.servers.push(await serveRpc({ modules: [module], port: 0, logger }));
  }
});
t.after(async (ctx) => {
  for (const s of ctx.servers) await s.close();
  await ctx.mongo.close();
});

t("a user moved through one replica and asked back into its old team through the other ends in the old team", async ({ servers }) => {
  const [one, two] = servers.map((s) => rpcClient(PlansService, s.url));
  const productId = product();
  for (const id of ["acme", "beta"]) await one!.createTeam({ productId, externalTeamId: id, name: id });
  await one!.createUser({ productId, externalUserId: "u" });
  await one!.setUserTeam({ productId, externalUserId: "u", externalTeamId: "acme" });
  // The second replica caches the user in acme.
  assert.is((await two!.getUser({ productId, externalUserId: "u" })).user?.teamId, "acme");
  await one!.setUserTeam({ productId, externalUserId: "u", externalTeamId: "beta" });
  // Before the second replica's next poll of the change ring, acme is asked for through it.
  const back = await two!.setUserTeam({ productId, externalUserId: "u", externalTeamId: "acme" });
  assert.is(back.user?.teamId, "acme");
  assert.is((await one!.getUser({ productId, externalUserId: "u" })).user?.teamId, "acme");
});

t.run();
