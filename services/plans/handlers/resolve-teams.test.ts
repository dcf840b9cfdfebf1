import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { failure, jan, product, withPlans, type PlansSuite } from "../testing/suite.ts";

const t = suite<PlansSuite>("ResolveTeams and ResolveUsers' teams over gRPC");
withPlans(t);

t("a member resolves with its memberships and each team's subscriptions and plans, member-scope limits included", async ({ client }) => {
  const productId = product();
  const [teamPlan, own] = (
    await client.createPlans({
      productId,
      plans: [
        {
          name: "team-500",
          maxSpendPerPeriod: 500,
          limits: [{ name: "seat", metric: "spend", max: 50, window: "month", scope: "member" }, { name: "daily", metric: "spend", max: 100, window: "day" }],
        },
        { name: "own", maxSpendPerPeriod: 20 },
      ],
    })
  ).plans;
  const acme = (await client.createTeam({ productId, externalTeamId: "acme", name: "Acme" })).team!;
  await client.setTeamSubscription({ productId, externalTeamId: "acme", planId: teamPlan!.id, ...jan });
  for (const id of ["m1", "m2", "solo"]) await client.createUser({ productId, externalUserId: id });
  await client.setSubscription({ productId, externalUserId: "m1", planId: own!.id, ...jan });
  await client.setUserTeam({ productId, externalUserId: "m1", externalTeamId: "acme" });
  await client.setUserTeam({ productId, externalUserId: "m2", externalTeamId: "acme" });

  const res = await client.resolveUsers({ productId, externalUserIds: ["m1", "m2", "solo"] });
  const by = new Map(res.users.map((u) => [u.user!.externalUserId, u]));
  const m1 = by.get("m1")!;
  assert.is(m1.user!.teamId, "acme");
  assert.equal(Object.keys(m1.plans), [own!.id], "the user's own plans stay the user's");
  assert.equal(m1.memberships.map((m) => m.teamId), [acme.id]);
  const team = m1.teams[acme.id]!;
  assert.is(team.team!.externalTeamId, "acme");
  assert.is(team.team!.planName, "team-500");
  assert.is(team.team!.memberCount, 0n, "not counted for attribution (GetTeam carries it)");
  assert.is((await client.getTeam({ productId, externalTeamId: "acme" })).team!.memberCount, 2n);
  assert.equal(team.subscriptions.map((s) => s.planId), [teamPlan!.id]);
  assert.equal(team.plans[teamPlan!.id]!.limits.map((l) => [l.name, l.scope]), [["seat", "member"], ["daily", undefined]]);
  assert.is(by.get("m2")!.teams[acme.id]!.team!.id, acme.id);
  assert.equal(by.get("solo")!.memberships, []);
  assert.equal(by.get("solo")!.teams, {});

  const teams = await client.resolveTeams({ productId, externalTeamIds: ["acme", "ghost", "acme"] });
  assert.equal(teams.teams.map((x) => x.team!.id), [acme.id]);
  assert.is(teams.teams[0]!.plans[teamPlan!.id]!.maxSpendPerPeriod, 500);
  assert.equal((await client.resolveTeams({ productId: product(), externalTeamIds: ["acme"] })).teams, []);
  assert.is((await failure(client.resolveTeams({ productId, externalTeamIds: Array.from({ length: 1001 }, (_, i) => `t${i}`) }))).code, Code.InvalidArgument);
});

t("a team plan update reaches every member's resolution at once", async ({ client }) => {
  const productId = product();
  const [plan] = (await client.createPlans({ productId, plans: [{ name: "team", maxSpendPerPeriod: 1 }] })).plans;
  await client.createTeam({ productId, externalTeamId: "acme", name: "Acme" });
  await client.setTeamSubscription({ productId, externalTeamId: "acme", planId: plan!.id, ...jan });
  for (const id of ["a", "b"]) {
    await client.createUser({ productId, externalUserId: id });
    await client.setUserTeam({ productId, externalUserId: id, externalTeamId: "acme" });
  }
  const cap = async () => (await client.resolveUsers({ productId, externalUserIds: ["a", "b"] })).users.map((u) => Object.values(u.teams)[0]!.plans[plan!.id]!.maxSpendPerPeriod);
  assert.equal(await cap(), [1, 1]);
  await client.updatePlan({ productId, planId: plan!.id, plan: { maxSpendPerPeriod: 5 }, updateMask: { paths: ["max_spend_per_period"] } });
  assert.equal(await cap(), [5, 5]);
});

t.run();
