import { suite } from "uvu";
import * as assert from "uvu/assert";
import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { fromTimestamp } from "@meter/lib/time";
import { PlanStore } from "../store/plans.ts";
import { failure, product, withPlans, type PlansSuite } from "../testing/suite.ts";

const t = suite<PlansSuite>("UpdatePlan over gRPC");
withPlans(t);

t("updates only the fields in the mask; a named unset optional field clears it", async ({ client }) => {
  const productId = product();
  const [plan] = (
    await client.createPlans({ productId, plans: [{ name: "p", maxSpendPerPeriod: 10, maxSpendPerSession: 2, toolCosts: { t: 1 } }] })
  ).plans;
  const res = await client.updatePlan({
    productId,
    planId: plan!.id,
    plan: { maxSpendPerSession: 5, softGateAt: 0.7 },
    updateMask: { paths: ["max_spend_per_session", "max_spend_per_period"] },
  });
  assert.is(res.plan!.maxSpendPerSession, 5);
  assert.is(res.plan!.maxSpendPerPeriod, undefined, "cleared back to unlimited");
  assert.is(res.plan!.softGateAt, 0.8, "not in the mask, unchanged");
  assert.is(res.plan!.toolCosts.t, 1);
  assert.ok(fromTimestamp(res.plan!.updatedAt)!.getTime() >= fromTimestamp(plan!.updatedAt)!.getTime());
  const cleared = await client.updatePlan({ productId, planId: plan!.id, plan: {}, updateMask: { paths: ["tool_costs", "soft_gate_at"] } });
  assert.equal(cleared.plan!.toolCosts, {});
  assert.is(cleared.plan!.softGateAt, 0.8);
  const [listed] = (await client.listPlans({ productId })).plans;
  assert.is(listed!.maxSpendPerSession, 5);
});

t("refuses updates that leave the plan invalid, unknown fields and clearing the name", async ({ client }) => {
  const productId = product();
  const [plan] = (await client.createPlans({ productId, plans: [{ name: "p", hardGateAt: 0.9 }] })).plans;
  const bad = [
    { plan: { softGateAt: 0.95 }, updateMask: { paths: ["soft_gate_at"] } },
    { plan: {}, updateMask: { paths: ["colour"] } },
    { plan: {}, updateMask: { paths: ["name"] } },
  ];
  for (const b of bad) {
    const err = await failure(client.updatePlan({ productId, planId: plan!.id, ...b }));
    assert.is(err.code, Code.InvalidArgument, err.rawMessage);
  }
  const [listed] = (await client.listPlans({ productId })).plans;
  assert.is(listed!.softGateAt, 0.8);
});

t("renames a plan unless the name is taken", async ({ client }) => {
  const productId = product();
  const [a] = (await client.createPlans({ productId, plans: [{ name: "a" }, { name: "b" }] })).plans;
  const err = await failure(client.updatePlan({ productId, planId: a!.id, plan: { name: "b" }, updateMask: { paths: ["name"] } }));
  assert.is(err.code, Code.AlreadyExists);
  const ok = await client.updatePlan({ productId, planId: a!.id, plan: { name: "c" }, updateMask: { paths: ["name"] } });
  assert.is(ok.plan!.name, "c");
});

t("reads another product's plan, an unknown id or a malformed id as not found", async ({ client }) => {
  const [plan] = (await client.createPlans({ productId: product(), plans: [{ name: "mine" }] })).plans;
  for (const [productId, planId] of [
    [product(), plan!.id],
    [product(), randomUUID()],
    [product(), "not-a-uuid"],
    [product(), ""],
  ] as const) {
    const err = await failure(client.updatePlan({ productId, planId, plan: {}, updateMask: { paths: [] } }));
    assert.is(err.code, Code.NotFound);
  }
});

t("a plan write based on a stale version is refused, so the merge is redone", async ({ client, mongo, dbName }) => {
  const productId = product();
  const [plan] = (await client.createPlans({ productId, plans: [{ name: "p" }] })).plans;
  const store = new PlanStore(mongo.db(dbName));
  const stale = (await store.get(productId, plan!.id))!;
  await client.updatePlan({ productId, planId: plan!.id, plan: { maxSpendPerPeriod: 1 }, updateMask: { paths: ["max_spend_per_period"] } });
  assert.is(await store.replace(productId, stale, { ...stale, default_tool_cost: 3 }), "conflict");
  const [p] = (await client.listPlans({ productId })).plans;
  assert.is(p!.maxSpendPerPeriod, 1);
  assert.is(p!.defaultToolCost, 0.02);
  const sequential = await client.updatePlan({ productId, planId: plan!.id, plan: { defaultToolCost: 3 }, updateMask: { paths: ["default_tool_cost"] } });
  assert.is(sequential.plan!.maxSpendPerPeriod, 1);
  assert.is(sequential.plan!.defaultToolCost, 3);
});

t("a plan stored with an amount below the unit (before amounts were kept to it) can still be changed; the amount reads as the $0 it was enforced as", async ({ client, mongo, dbName }) => {
  const productId = product();
  const [plan] = (await client.createPlans({ productId, plans: [{ name: "legacy", maxSpendPerPeriod: 5 }] })).plans;
  const store = new PlanStore(mongo.db(dbName));
  const stored = (await store.get(productId, plan!.id))!;
  assert.ok(typeof (await store.replace(productId, stored, { ...stored, credits_low_at: 1e-10 })) === "object", "written as an older service would have");
  const renamed = await client.updatePlan({ productId, planId: plan!.id, plan: { name: "renamed" }, updateMask: { paths: ["name"] } });
  assert.equal([renamed.plan!.name, renamed.plan!.creditsLowAt], ["renamed", 0]);
  // Sent now, such an amount is refused.
  assert.is((await failure(client.updatePlan({ productId, planId: plan!.id, plan: { creditsLowAt: 1e-10 }, updateMask: { paths: ["credits_low_at"] } }))).code, Code.InvalidArgument);
});

t.run();
