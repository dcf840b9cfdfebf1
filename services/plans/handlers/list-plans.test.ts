import { suite } from "uvu";
import * as assert from "uvu/assert";
import { product, withPlans, type PlansSuite } from "../testing/suite.ts";

const t = suite<PlansSuite>("ListPlans over gRPC");
withPlans(t);

t("the product's plans in creation order with their settings and changes; another product's are not listed", async ({ client }) => {
  const productId = product();
  assert.equal((await client.listPlans({ productId })).plans, []);
  const first = (await client.createPlans({ productId, plans: [{ name: "free", maxSpendPerPeriod: 1 }, { name: "pro", maxSpendPerPeriod: 20, creditsEnabled: true }] })).plans;
  const later = (await client.createPlans({ productId, plans: [{ name: "team" }] })).plans;
  await client.createPlans({ productId: product(), plans: [{ name: "elsewhere" }] });
  assert.equal((await client.listPlans({ productId })).plans, [...first, ...later]);

  // A change shows in the next listing.
  const updated = (await client.updatePlan({ productId, planId: first[0]!.id, plan: { maxSpendPerPeriod: 2 }, updateMask: { paths: ["max_spend_per_period"] } })).plan!;
  const listed = (await client.listPlans({ productId })).plans;
  assert.equal(listed.map((p) => [p.name, p.maxSpendPerPeriod, p.creditsEnabled]), [["free", 2, false], ["pro", 20, true], ["team", undefined, false]]);
  assert.equal(listed[0], updated);
});

t.run();
