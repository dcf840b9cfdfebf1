import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { createLogger } from "@meter/lib/logger";
import { eventually } from "../../../test/support/eventually.ts";
import { TeamStore } from "../store/teams.ts";
import { UserStore } from "../store/users.ts";
import { failure, jan, product, withPlans, type PlansSuite } from "../testing/suite.ts";

const t = suite<PlansSuite>("SetTeamSubscription over gRPC");
withPlans(t);

t("a team's subscription follows a user's rules and is appended to its history", async ({ client }) => {
  const productId = product();
  const [capped, unlimited] = (await client.createPlans({ productId, plans: [{ name: "team-500", maxSpendPerPeriod: 500 }, { name: "open" }] })).plans;
  await client.createTeam({ productId, externalTeamId: "acme", name: "Acme" });

  assert.is((await failure(client.setTeamSubscription({ productId, externalTeamId: "acme", planId: capped!.id }))).code, Code.FailedPrecondition);
  const backwards = await failure(client.setTeamSubscription({ productId, externalTeamId: "acme", planId: capped!.id, periodStart: jan.periodEnd, periodEnd: jan.periodStart }));
  assert.is(backwards.code, Code.InvalidArgument);
  assert.is((await failure(client.setTeamSubscription({ productId, externalTeamId: "acme", planId: unlimited!.id, periodEnd: jan.periodEnd }))).code, Code.InvalidArgument);
  assert.is((await failure(client.setTeamSubscription({ productId, externalTeamId: "acme", planId: unlimited!.id, billingSubscriptionId: "b".repeat(256) }))).code, Code.InvalidArgument);
  assert.is((await failure(client.setTeamSubscription({ productId, externalTeamId: "ghost", planId: capped!.id, ...jan }))).code, Code.NotFound);
  assert.is((await failure(client.setTeamSubscription({ productId, externalTeamId: "acme", planId: "team-500", ...jan }))).code, Code.NotFound);
  const [foreign] = (await client.createPlans({ productId: product(), plans: [{ name: "foreign" }] })).plans;
  assert.is((await failure(client.setTeamSubscription({ productId, externalTeamId: "acme", planId: foreign!.id }))).code, Code.NotFound);

  const free = await client.setTeamSubscription({ productId, externalTeamId: "acme", planId: unlimited!.id });
  assert.is(free.team!.planName, "open");
  const paid = await client.setTeamSubscription({ productId, externalTeamId: "acme", planId: capped!.id.toUpperCase(), billingSubscriptionId: "sub_acme", ...jan });
  assert.is(paid.team!.planName, "team-500");
  assert.is(paid.team!.billingSubscriptionId, "sub_acme");
  assert.is((await client.getTeam({ productId, externalTeamId: "acme" })).team!.planName, "team-500");
  const [resolved] = (await client.resolveTeams({ productId, externalTeamIds: ["acme", "ghost"] })).teams;
  assert.equal(resolved!.subscriptions.map((s) => s.planName), ["open", "team-500"]);
  assert.equal(Object.keys(resolved!.plans).sort(), [capped!.id, unlimited!.id].sort());
  // A team's subscription is not a user's: the plan counts it among its teams, from the plan it left to the one it is on.
  const counts = (await client.countSubscribers({ productId })).plans;
  assert.equal(counts.map((p) => [p.planName, Number(p.subscriberCount), Number(p.teamSubscriberCount)]), [["team-500", 0, 1], ["open", 0, 0]]);
});

t("a team's subscription set through one replica reaches another replica's cached members within seconds", async ({ client, mongo, dbName }) => {
  const productId = product();
  const [a, b] = (await client.createPlans({ productId, plans: [{ name: "a" }, { name: "b" }] })).plans;
  await client.createTeam({ productId, externalTeamId: "acme", name: "Acme" });
  await client.setTeamSubscription({ productId, externalTeamId: "acme", planId: a!.id });
  const db = mongo.db(dbName);
  const users = new UserStore(db, { logger: createLogger("plans-test", "silent"), cacheBytes: 8 << 20 });
  const elsewhere = new TeamStore(db, users.cache);
  users.cache.start();
  try {
    const planOf = async () => (await elsewhere.get(productId, "acme"))?.current?.plan_id;
    assert.is(await planOf(), a!.id);
    await client.setTeamSubscription({ productId, externalTeamId: "acme", planId: b!.id });
    await eventually(async () => (await planOf()) === b!.id, 15_000, "the other replica to forget the cached team");
  } finally {
    await users.cache.stop();
  }
});

t.run();
