import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { failure, product, withPlans, type PlansSuite } from "../testing/suite.ts";

const t = suite<PlansSuite>("ListTeams over gRPC");
withPlans(t);

t("pages teams in external id order by prefix; every team once; bad limits and cursors refused", async ({ client }) => {
  const productId = product();
  const ids = ["acme", "acme-eu", "acme-us", "beta", "zeta", "acme🙂"];
  for (const id of ids) await client.createTeam({ productId, externalTeamId: id, name: id.toUpperCase() });
  await client.createTeam({ productId: product(), externalTeamId: "acme-other-product", name: "x" });
  await client.createUser({ productId, externalUserId: "acme-user" });

  const seen: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTeams({ productId, prefix: "acme", limit: 2, cursor });
    assert.ok(page.teams.length <= 2);
    seen.push(...page.teams.map((x) => x.externalTeamId));
    cursor = page.nextCursor;
  } while (cursor);
  assert.equal(seen, ["acme", "acme-eu", "acme-us", "acme🙂"]);
  const all = await client.listTeams({ productId, prefix: "" });
  assert.equal(all.teams.map((x) => x.externalTeamId), [...ids].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
  assert.is(all.nextCursor, undefined);
  assert.is(all.teams[0]!.name, "ACME");

  for (const limit of [-1, 201]) assert.is((await failure(client.listTeams({ productId, prefix: "", limit }))).code, Code.InvalidArgument);
  assert.is((await failure(client.listTeams({ productId, prefix: "", cursor: "nonsense" }))).code, Code.InvalidArgument);
  const usersCursor = (await client.listUsers({ productId, prefix: "", limit: 1 })).nextCursor;
  if (usersCursor) assert.is((await failure(client.listTeams({ productId, prefix: "", cursor: usersCursor }))).code, Code.InvalidArgument);
});

t.run();
