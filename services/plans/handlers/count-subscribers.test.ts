import { suite } from "uvu";
import * as assert from "uvu/assert";
import { product, withPlans, type PlansSuite } from "../testing/suite.ts";

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

t.run();
