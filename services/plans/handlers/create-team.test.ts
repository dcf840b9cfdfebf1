import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { failure, product, withPlans, type PlansSuite } from "../testing/suite.ts";

const t = suite<PlansSuite>("CreateTeam and GetTeam over gRPC");
withPlans(t);

t("creates and gets teams; duplicates and bad ids or names are refused; products are isolated", async ({ client }) => {
  const productId = product();
  const weird = "acme/é 🙂:x";
  const created = await client.createTeam({ productId, externalTeamId: weird, name: "Acme" });
  assert.is(created.team!.externalTeamId, weird);
  assert.is(created.team!.name, "Acme");
  assert.is(created.team!.planName, undefined);
  assert.is(created.team!.memberCount, 0n);
  assert.match(created.team!.id, /^[0-9a-f-]{36}$/);
  const got = await client.getTeam({ productId, externalTeamId: weird });
  assert.is(got.team!.id, created.team!.id);
  assert.is((await failure(client.createTeam({ productId, externalTeamId: weird, name: "again" }))).code, Code.AlreadyExists);
  for (const [externalTeamId, name, needle] of [
    ["", "n", "external_team_id"],
    ["x".repeat(256), "n", "external_team_id"],
    ["ok", "", "name"],
    ["ok", "n".repeat(256), "name"],
  ] as const) {
    const err = await failure(client.createTeam({ productId, externalTeamId, name }));
    assert.is(err.code, Code.InvalidArgument);
    assert.ok(err.rawMessage.includes(needle), err.rawMessage);
  }
  assert.is((await failure(client.getTeam({ productId, externalTeamId: "ghost" }))).code, Code.NotFound);
  assert.is((await failure(client.getTeam({ productId: product(), externalTeamId: weird }))).code, Code.NotFound);
  const other = await client.createTeam({ productId: product(), externalTeamId: weird, name: "Acme" });
  assert.is.not(other.team!.id, created.team!.id);
});

t("a team and a user of the same external id are different records", async ({ client }) => {
  const productId = product();
  await client.createTeam({ productId, externalTeamId: "same", name: "Team" });
  await client.createUser({ productId, externalUserId: "same", name: "User" });
  assert.is((await client.getTeam({ productId, externalTeamId: "same" })).team!.name, "Team");
  assert.is((await client.getUser({ productId, externalUserId: "same" })).user!.name, "User");
});

t("many parallel creations of one team yield exactly one", async ({ client }) => {
  const productId = product();
  const results = await Promise.allSettled(Array.from({ length: 12 }, () => client.createTeam({ productId, externalTeamId: "race", name: "r" })));
  assert.is(results.filter((r) => r.status === "fulfilled").length, 1);
});

t.run();
