import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcCode } from "../../../test/support/rpc.ts";
import { createLogger } from "@meter/lib/logger";
import { NO_PEERS, product, withPlans, type PlansSuite } from "../testing/suite.ts";
import { createPlansService } from "../index.ts";

const t = suite<PlansSuite>("CountSubscribers over gRPC");
withPlans(t);

t("counts subscribers per plan by current subscription, zero included", async ({ client }) => {
  const productId = product();
  const [a, b] = (await client.createPlans({ productId, plans: [{ name: "a" }, { name: "b" }, { name: "c" }] })).plans;
  for (const id of ["1", "2", "3", "4"]) await client.createUser({ productId, externalUserId: id });
  await client.setSubscription({ productId, externalUserId: "1", planId: a!.id });
  await client.setSubscription({ productId, externalUserId: "2", planId: a!.id });
  await client.setSubscription({ productId, externalUserId: "3", planId: a!.id });
  await client.setSubscription({ productId, externalUserId: "3", planId: b!.id });
  const res = await client.countSubscribers({ productId });
  assert.equal(
    res.plans.map((p) => [p.planName, Number(p.subscriberCount)]),
    [["a", 2], ["b", 1], ["c", 0]],
  );
  assert.equal((await client.countSubscribers({ productId: product() })).plans, []);
});

t("with a team, counts its current members by their own plans: not a member who left, not another team's", async ({ client }) => {
  const productId = product();
  const [a, b] = (await client.createPlans({ productId, plans: [{ name: "a" }, { name: "b" }] })).plans;
  for (const team of ["acme", "beta"]) await client.createTeam({ productId, externalTeamId: team, name: team });
  for (const [id, plan, team] of [["ann", a, "acme"], ["bob", b, "acme"], ["cid", a, "acme"], ["dan", a, "beta"], ["eve", null, "acme"]] as const) {
    await client.createUser({ productId, externalUserId: id });
    if (plan) await client.setSubscription({ productId, externalUserId: id, planId: plan.id });
    await client.setUserTeam({ productId, externalUserId: id, externalTeamId: team });
  }
  await client.setUserTeam({ productId, externalUserId: "cid", externalTeamId: "beta" });
  const counts = async (team?: string) =>
    (await client.countSubscribers({ productId, externalTeamId: team })).plans.map((p) => [p.planName, Number(p.subscriberCount)]);
  assert.equal(await counts("acme"), [["a", 1], ["b", 1]]);
  // The team itself is counted on its own plan, among the plan's teams.
  await client.setTeamSubscription({ productId, externalTeamId: "acme", planId: b!.id });
  const teams = async (team?: string) => (await client.countSubscribers({ productId, externalTeamId: team })).plans.map((p) => Number(p.teamSubscriberCount));
  assert.equal(await teams("acme"), [0, 1]);
  assert.equal(await teams("beta"), [0, 0]);
  assert.equal(await teams(), [0, 1]);
  assert.equal(await counts("beta"), [["a", 2], ["b", 0]]);
  assert.equal(await counts(), [["a", 3], ["b", 1]]);
  assert.is(await rpcCode(client.countSubscribers({ productId, externalTeamId: "nope" })), Code.NotFound);
});

t("counts teams on each plan as they move, and sets the counts of teams subscribed before they were kept", async ({ client, mongo, dbName }) => {
  const productId = product();
  const [a, b] = (await client.createPlans({ productId, plans: [{ name: "a" }, { name: "b" }] })).plans;
  for (const team of ["acme", "beta", "core", "idle"]) await client.createTeam({ productId, externalTeamId: team, name: team });
  await client.setTeamSubscription({ productId, externalTeamId: "acme", planId: a!.id });
  await client.setTeamSubscription({ productId, externalTeamId: "beta", planId: a!.id });
  await client.setTeamSubscription({ productId, externalTeamId: "core", planId: a!.id });
  await client.setTeamSubscription({ productId, externalTeamId: "core", planId: b!.id });
  const teams = async () => (await client.countSubscribers({ productId })).plans.map((p) => [p.planName, Number(p.subscriberCount), Number(p.teamSubscriberCount)]);
  assert.equal(await teams(), [["a", 0, 2], ["b", 0, 1]]);
  // A database of a release that kept no team counts: the next start counts the teams' current plans, once.
  await mongo.db(dbName).collection("plan_team_subscribers").drop();
  await createPlansService({ db: mongo.db(dbName), logger: createLogger("plans-test", "silent"), peers: NO_PEERS });
  assert.equal(await teams(), [["a", 0, 2], ["b", 0, 1]]);
  await client.setTeamSubscription({ productId, externalTeamId: "idle", planId: b!.id });
  await createPlansService({ db: mongo.db(dbName), logger: createLogger("plans-test", "silent"), peers: NO_PEERS });
  assert.equal(await teams(), [["a", 0, 2], ["b", 0, 2]]);
});

t.run();
