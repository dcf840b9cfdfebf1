import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { fromTimestamp } from "@meter/lib/time";
import { failure, product, withPlans, type PlansSuite } from "../testing/suite.ts";

const t = suite<PlansSuite>("SetUserTeam over gRPC");
withPlans(t);

const count = async (client: PlansSuite["client"], productId: string, team: string) =>
  Number((await client.getTeam({ productId, externalTeamId: team })).team!.memberCount);

t("joins, moves and leaves: one team at a time, the history keeps every change, counts follow", async ({ client }) => {
  const productId = product();
  const acme = (await client.createTeam({ productId, externalTeamId: "acme", name: "Acme" })).team!;
  const beta = (await client.createTeam({ productId, externalTeamId: "beta", name: "Beta" })).team!;
  await client.createUser({ productId, externalUserId: "ann" });
  await client.createUser({ productId, externalUserId: "bob" });

  assert.is((await client.getUser({ productId, externalUserId: "ann" })).user!.teamId, undefined);
  assert.is((await client.setUserTeam({ productId, externalUserId: "ann", externalTeamId: "acme" })).user!.teamId, "acme");
  await client.setUserTeam({ productId, externalUserId: "bob", externalTeamId: "acme" });
  assert.is(await count(client, productId, "acme"), 2);
  // The team the user is in already: nothing changes.
  await client.setUserTeam({ productId, externalUserId: "bob", externalTeamId: "acme" });
  assert.is(await count(client, productId, "acme"), 2);

  const moved = await client.setUserTeam({ productId, externalUserId: "ann", externalTeamId: "beta" });
  assert.is(moved.user!.teamId, "beta");
  assert.equal([await count(client, productId, "acme"), await count(client, productId, "beta")], [1, 1]);
  const left = await client.setUserTeam({ productId, externalUserId: "ann" });
  assert.is(left.user!.teamId, undefined);
  assert.is((await client.getUser({ productId, externalUserId: "ann" })).user!.teamId, undefined);
  assert.equal([await count(client, productId, "acme"), await count(client, productId, "beta")], [1, 0]);
  // Leaving when in no team changes nothing.
  await client.setUserTeam({ productId, externalUserId: "ann" });

  const [ann] = (await client.resolveUsers({ productId, externalUserIds: ["ann"] })).users;
  assert.equal(ann!.memberships.map((m) => [m.teamId, m.externalTeamId]), [[acme.id, "acme"], [beta.id, "beta"], [undefined, undefined]]);
  const times = ann!.memberships.map((m) => fromTimestamp(m.effectiveAt)!.getTime());
  assert.equal(times, [...times].sort((x, y) => x - y));
  assert.equal(Object.keys(ann!.teams).sort(), [acme.id, beta.id].sort(), "every team of the history, for the usage counted while in it");

  assert.is((await failure(client.setUserTeam({ productId, externalUserId: "ghost", externalTeamId: "acme" }))).code, Code.NotFound);
  assert.is((await failure(client.setUserTeam({ productId, externalUserId: "bob", externalTeamId: "ghost" }))).code, Code.NotFound);
  assert.is((await failure(client.setUserTeam({ productId: product(), externalUserId: "bob", externalTeamId: "acme" }))).code, Code.NotFound);
  assert.is((await client.getUser({ productId, externalUserId: "bob" })).user!.teamId, "acme", "a refused change leaves the user as it was");
});

t("concurrent moves of one user: it ends in one team, listed there alone, and the counts add up", async ({ client }) => {
  const productId = product();
  const teams = Array.from({ length: 6 }, (_, i) => `t${i}`);
  for (const id of teams) await client.createTeam({ productId, externalTeamId: id, name: id });
  await client.createUser({ productId, externalUserId: "mover" });
  await Promise.all(teams.map((id) => client.setUserTeam({ productId, externalUserId: "mover", externalTeamId: id })));
  const current = (await client.getUser({ productId, externalUserId: "mover" })).user!.teamId!;
  for (const id of teams) {
    assert.is(await count(client, productId, id), id === current ? 1 : 0, id);
    const members = (await client.listTeamMembers({ productId, externalTeamId: id })).users.map((u) => u.externalUserId);
    assert.equal(members, id === current ? ["mover"] : [], id);
  }
  const [r] = (await client.resolveUsers({ productId, externalUserIds: ["mover"] })).users;
  assert.is(r!.memberships.length, 6);
  assert.is(r!.memberships.at(-1)!.externalTeamId, current);
});

t.run();
