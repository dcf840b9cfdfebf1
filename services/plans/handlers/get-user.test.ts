import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { failure, jan, product, withPlans, type PlansSuite } from "../testing/suite.ts";

const t = suite<PlansSuite>("GetUser over gRPC");
withPlans(t);

t("answers the user as created, then with the current name of its plan (a rename included)", async ({ client }) => {
  const productId = product();
  const created = (await client.createUser({ productId, externalUserId: "u1", name: "Ada" })).user!;
  const plain = (await client.getUser({ productId, externalUserId: "u1" })).user!;
  assert.equal(plain, created);
  assert.equal([plain.externalUserId, plain.name, plain.planName], ["u1", "Ada", undefined]);

  const [plan] = (await client.createPlans({ productId, plans: [{ name: "gold" }] })).plans;
  await client.setSubscription({ productId, externalUserId: "u1", planId: plan!.id, billingSubscriptionId: "sub_1", ...jan });
  let user = (await client.getUser({ productId, externalUserId: "u1" })).user!;
  assert.equal([user.id, user.planName, user.billingSubscriptionId], [created.id, "gold", "sub_1"]);
  await client.updatePlan({ productId, planId: plan!.id, plan: { name: "platinum" }, updateMask: { paths: ["name"] } });
  user = (await client.getUser({ productId, externalUserId: "u1" })).user!;
  assert.is(user.planName, "platinum");
});

t("an unknown user and another product's user are NOT_FOUND, named in the message", async ({ client }) => {
  const productId = product();
  await client.createUser({ productId, externalUserId: "u1" });
  for (const req of [{ productId, externalUserId: "nobody" }, { productId: product(), externalUserId: "u1" }, { productId, externalUserId: "" }]) {
    const err = await failure(client.getUser(req));
    assert.equal([err.code, err.rawMessage], [Code.NotFound, `user "${req.externalUserId}" not found`]);
  }
});

t.run();
