import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { toTimestamp } from "@meter/lib/time";
import { rpcCode } from "../../../test/support/rpc.ts";
import { withInstance, type InstanceSuite } from "../testing/instance.ts";

const t = suite<InstanceSuite>("PublishThresholdCrossings");
withInstance(t, "webhooks_publish_crossings", { runJobs: false });

t("refuses a crossing without ids or of another threshold; one event per user, period and threshold, whatever its id", async ({ svc, db }) => {
  const productId = randomUUID();
  const crossing = (fields: Record<string, unknown> = {}) => ({ id: randomUUID(), productId, userId: "u1", thresholdPct: 80, currentSpend: 8, spendLimit: 10, periodStart: toTimestamp(new Date("2026-11-01T00:00:00Z")), ...fields });
  for (const bad of [{ id: "" }, { userId: "" }, { productId: "" }, { thresholdPct: 42 }]) {
    assert.is(await rpcCode(svc.client.publishThresholdCrossings({ crossings: [crossing(bad)] })), Code.InvalidArgument, Object.keys(bad).join());
  }
  const { endpoint } = await svc.client.createEndpoint({ productId, url: "http://127.0.0.1:1/hook", subscribedEvents: ["usage.threshold.80", "usage.threshold.100"] });
  await svc.client.publishThresholdCrossings({ crossings: [crossing(), crossing(), crossing({ periodStart: toTimestamp(new Date("2026-12-01T00:00:00Z")) }), crossing({ thresholdPct: 100 })] });
  // The events recorded for the endpoint (its deliveries are made from them).
  const recorded = await db.collection("events").find({ product_id: productId, endpoint_ids: endpoint!.id }).toArray();
  const types = recorded.map((e) => e.type).sort();
  assert.equal(types, ["usage.threshold.100", "usage.threshold.80", "usage.threshold.80"]);
});

t.run();
