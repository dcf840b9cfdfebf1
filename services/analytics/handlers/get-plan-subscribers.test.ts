import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import { createLogger } from "@meter/lib/logger";
import { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { freshDbName } from "../../../test/support/database.ts";
import { serveInstance } from "../../../test/support/instance.ts";
import { createPlansService } from "../../plans/index.ts";
import { NO_PEERS } from "../../plans/testing/suite.ts";
import { eq, instance } from "../testing/facts.ts";
import { withReplicas, type Replicas } from "../testing/instance.ts";

const t = suite<Replicas>("GetPlanSubscribers over gRPC");
withReplicas(t, "analytics_get_plan_subscribers");

t("answers the plans service's counts by plan name, plans nobody is on included", async (ctx) => {
  const logger = createLogger("plans-test", "silent");
  const plans = await serveInstance(PlansService, await createPlansService({ db: ctx.mongo.db(freshDbName("plans_of_analytics")), logger, peers: NO_PEERS }), logger);
  try {
    const a = await instance(ctx, { peers: { ...NO_PEERS, plans: plans.server.url } });
    const productId = randomUUID();
    const created = (await plans.client.createPlans({ productId, plans: [{ name: "pro" }, { name: "basic" }, { name: "team" }] })).plans;
    for (const u of ["u1", "u2", "u3"]) await plans.client.createUser({ productId, externalUserId: u });
    await plans.client.setSubscription({ productId, externalUserId: "u1", planId: created[0]!.id });
    await plans.client.setSubscription({ productId, externalUserId: "u2", planId: created[0]!.id });
    await plans.client.setSubscription({ productId, externalUserId: "u3", planId: created[2]!.id });
    const { plans: counts } = await a.client.getPlanSubscribers({ productId });
    eq(counts.map((p) => [p.planName, p.subscriberCount]), [["basic", 0], ["pro", 2], ["team", 1]]);
  } finally {
    await plans.close();
  }
});

t.run();
