import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { failure, product, withPlans, type PlansSuite } from "../testing/suite.ts";

const t = suite<PlansSuite>("ListChanges over gRPC");
withPlans(t);

t("names the plans updated and the users subscribed after a marker; a negative marker is refused", async ({ client }) => {
  const productId = product();
  assert.is((await failure(client.listChanges({ productId, since: -1n }))).code, Code.InvalidArgument);
  const [plan] = (await client.createPlans({ productId, plans: [{ name: "basic" }] })).plans;
  await client.createUser({ productId, externalUserId: "u1" });
  const start = await client.listChanges({ productId });
  await client.updatePlan({ productId, planId: plan!.id, plan: { softGateAt: 0.5 }, updateMask: { paths: ["soft_gate_at"] } });
  await client.setSubscription({ productId, externalUserId: "u1", planId: plan!.id });
  const after = await client.listChanges({ productId, since: start.marker });
  assert.equal([after.marker - start.marker, after.all, after.planIds, after.externalUserIds], [2n, false, [plan!.id], ["u1"]]);
  const none = await client.listChanges({ productId, since: after.marker });
  assert.equal([none.marker, none.planIds, none.externalUserIds], [after.marker, [], []]);
  // Another product's changes are not this one's.
  assert.is((await client.listChanges({ productId: product() })).marker, 0n);
});

t("names the users whose team was set and the teams whose subscription was set", async ({ client }) => {
  const productId = product();
  const [plan] = (await client.createPlans({ productId, plans: [{ name: "team" }] })).plans;
  await client.createTeam({ productId, externalTeamId: "acme", name: "Acme" });
  await client.createUser({ productId, externalUserId: "m1" });
  const start = await client.listChanges({ productId });
  await client.setUserTeam({ productId, externalUserId: "m1", externalTeamId: "acme" });
  await client.setTeamSubscription({ productId, externalTeamId: "acme", planId: plan!.id });
  const after = await client.listChanges({ productId, since: start.marker });
  assert.equal([after.marker - start.marker, after.all, after.planIds, after.externalUserIds, after.externalTeamIds], [2n, false, [], ["m1"], ["acme"]]);
  // Setting the team the user is in already is no change.
  await client.setUserTeam({ productId, externalUserId: "m1", externalTeamId: "acme" });
  assert.is((await client.listChanges({ productId, since: after.marker })).marker, after.marker);
});

t.run();
