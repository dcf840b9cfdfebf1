import { suite } from "uvu";
import * as assert from "uvu/assert";
import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { failure, feb, jan, product, withPlans, type PlansSuite } from "../testing/suite.ts";

const t = suite<PlansSuite>("SetSubscription over gRPC");
withPlans(t);

t("subscriptions: dates required for finite plans, optional otherwise, ordered, scoped", async ({ client }) => {
  const productId = product();
  const [capped, unlimited] = (
    await client.createPlans({ productId, plans: [{ name: "capped", maxSpendPerPeriod: 5 }, { name: "unlimited" }] })
  ).plans;
  await client.createUser({ productId, externalUserId: "u1" });

  const missing = await failure(client.setSubscription({ productId, externalUserId: "u1", planId: capped!.id }));
  assert.is(missing.code, Code.FailedPrecondition);
  const half = await failure(
    client.setSubscription({ productId, externalUserId: "u1", planId: capped!.id, periodStart: jan.periodStart }),
  );
  assert.is(half.code, Code.FailedPrecondition);
  const backwards = await failure(
    client.setSubscription({ productId, externalUserId: "u1", planId: capped!.id, periodStart: jan.periodEnd, periodEnd: jan.periodStart }),
  );
  assert.is(backwards.code, Code.InvalidArgument);
  const empty = await failure(
    client.setSubscription({ productId, externalUserId: "u1", planId: capped!.id, periodStart: jan.periodStart, periodEnd: jan.periodStart }),
  );
  assert.is(empty.code, Code.InvalidArgument);
  const oneDate = await failure(
    client.setSubscription({ productId, externalUserId: "u1", planId: unlimited!.id, periodEnd: jan.periodEnd }),
  );
  assert.is(oneDate.code, Code.InvalidArgument);

  const free = await client.setSubscription({ productId, externalUserId: "u1", planId: unlimited!.id });
  assert.is(free.user!.planName, "unlimited");
  assert.is(free.user!.billingSubscriptionId, undefined);
  const paid = await client.setSubscription({
    productId,
    externalUserId: "u1",
    planId: capped!.id.toUpperCase(),
    billingSubscriptionId: "sub_123",
    ...jan,
  });
  assert.is(paid.user!.planName, "capped");
  assert.is(paid.user!.billingSubscriptionId, "sub_123");
  assert.is((await client.getUser({ productId, externalUserId: "u1" })).user!.planName, "capped");

  assert.is((await failure(client.setSubscription({ productId, externalUserId: "nobody", planId: capped!.id, ...jan }))).code, Code.NotFound);
  assert.is((await failure(client.setSubscription({ productId, externalUserId: "u1", planId: randomUUID(), ...jan }))).code, Code.NotFound);
  assert.is((await failure(client.setSubscription({ productId, externalUserId: "u1", planId: "capped", ...jan }))).code, Code.NotFound);
  const [foreign] = (await client.createPlans({ productId: product(), plans: [{ name: "foreign" }] })).plans;
  assert.is((await failure(client.setSubscription({ productId, externalUserId: "u1", planId: foreign!.id }))).code, Code.NotFound);
});

t("the subscription in force set again changes nothing: the history, the counts and the listing stay as they were", async ({ client }) => {
  const productId = product();
  const [a, b] = (await client.createPlans({ productId, plans: [{ name: "a", maxSpendPerPeriod: 10 }, { name: "b" }] })).plans;
  await client.createUser({ productId, externalUserId: "login" });
  // A product that sets the subscription at every sign-in: one entry, however often.
  for (let i = 0; i < 5; i++) {
    const set = await client.setSubscription({ productId, externalUserId: "login", planId: a!.id, billingSubscriptionId: "sub_1", ...jan });
    assert.is(set.user!.planName, "a");
  }
  const history = async () => (await client.resolveUsers({ productId, externalUserIds: ["login"] })).users[0]!.subscriptions.map((s) => s.planName);
  assert.equal(await history(), ["a"]);
  // Anything different is a change: other dates, another billing id, another plan; and back again.
  await client.setSubscription({ productId, externalUserId: "login", planId: a!.id, billingSubscriptionId: "sub_1", ...feb });
  await client.setSubscription({ productId, externalUserId: "login", planId: a!.id, billingSubscriptionId: "sub_2", ...feb });
  await client.setSubscription({ productId, externalUserId: "login", planId: b!.id });
  await client.setSubscription({ productId, externalUserId: "login", planId: b!.id });
  await client.setSubscription({ productId, externalUserId: "login", planId: a!.id, billingSubscriptionId: "sub_2", ...feb });
  assert.equal(await history(), ["a", "a", "a", "b", "a"]);
  const counts = (await client.countSubscribers({ productId })).plans.map((p) => [p.planName, Number(p.subscriberCount)]);
  assert.equal(counts, [["a", 1], ["b", 0]]);
  const listed = await client.listUsers({ productId, planName: "a", limit: 10 });
  assert.equal(listed.users.map((u) => u.externalUserId), ["login"]);
});

t("concurrent subscription changes: the history has every change and ends with the current one", async ({ client }) => {
  const productId = product();
  const plans = (await client.createPlans({ productId, plans: Array.from({ length: 8 }, (_, i) => ({ name: `p${i}` })) })).plans;
  await client.createUser({ productId, externalUserId: "busy" });
  await Promise.all(plans.map((p) => client.setSubscription({ productId, externalUserId: "busy", planId: p.id })));
  const [r] = (await client.resolveUsers({ productId, externalUserIds: ["busy"] })).users;
  assert.is(r!.subscriptions.length, 8);
  assert.equal(new Set(r!.subscriptions.map((s) => s.planName)).size, 8);
  assert.is(r!.subscriptions.at(-1)!.planName, r!.user!.planName);
});

t("concurrent subscription changes of one user move the subscriber counts consistently", async ({ client }) => {
  const productId = product();
  const plans = (await client.createPlans({ productId, plans: Array.from({ length: 6 }, (_, i) => ({ name: `c${i}` })) })).plans;
  await client.createUser({ productId, externalUserId: "mover" });
  await client.createUser({ productId, externalUserId: "stayer" });
  await client.setSubscription({ productId, externalUserId: "stayer", planId: plans[0]!.id });
  await Promise.all(plans.map((p) => client.setSubscription({ productId, externalUserId: "mover", planId: p.id })));
  const current = (await client.getUser({ productId, externalUserId: "mover" })).user!.planName!;
  const counts = Object.fromEntries((await client.countSubscribers({ productId })).plans.map((p) => [p.planName, Number(p.subscriberCount)]));
  const expected = Object.fromEntries(plans.map((p) => [p.name, (p.name === current ? 1 : 0) + (p.name === "c0" ? 1 : 0)]));
  assert.equal(counts, expected);
});

t.run();
