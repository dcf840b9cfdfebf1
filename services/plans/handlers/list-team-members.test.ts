import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { failure, product, withPlans, type PlansSuite } from "../testing/suite.ts";

const t = suite<PlansSuite>("ListTeamMembers over gRPC");
withPlans(t);

t("pages a team's current members in external id order with their plans; leavers are gone", async ({ client }) => {
  const productId = product();
  const [pro] = (await client.createPlans({ productId, plans: [{ name: "pro" }] })).plans;
  await client.createTeam({ productId, externalTeamId: "acme", name: "Acme" });
  await client.createTeam({ productId, externalTeamId: "acme2", name: "Acme 2" });
  const ids = ["u1", "u2", "u3", "u4", "u5"];
  for (const id of ids) {
    await client.createUser({ productId, externalUserId: id });
    await client.setUserTeam({ productId, externalUserId: id, externalTeamId: "acme" });
  }
  await client.setSubscription({ productId, externalUserId: "u2", planId: pro!.id });
  await client.createUser({ productId, externalUserId: "other" });
  await client.setUserTeam({ productId, externalUserId: "other", externalTeamId: "acme2" });
  await client.setUserTeam({ productId, externalUserId: "u4", externalTeamId: "acme2" });
  await client.setUserTeam({ productId, externalUserId: "u5" });

  const seen: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTeamMembers({ productId, externalTeamId: "acme", limit: 2, cursor });
    seen.push(...page.users.map((u) => u.externalUserId));
    for (const u of page.users) assert.is(u.teamId, "acme");
    if (page.users.some((u) => u.externalUserId === "u2")) assert.is(page.users.find((u) => u.externalUserId === "u2")!.planName, "pro");
    cursor = page.nextCursor;
  } while (cursor);
  assert.equal(seen, ["u1", "u2", "u3"]);
  assert.equal((await client.listTeamMembers({ productId, externalTeamId: "acme2" })).users.map((u) => u.externalUserId), ["other", "u4"]);

  assert.is((await failure(client.listTeamMembers({ productId, externalTeamId: "ghost" }))).code, Code.NotFound);
  assert.is((await failure(client.listTeamMembers({ productId, externalTeamId: "acme", limit: 500 }))).code, Code.InvalidArgument);
  assert.is((await failure(client.listTeamMembers({ productId, externalTeamId: "acme", cursor: "x" }))).code, Code.InvalidArgument);
});

t.run();
