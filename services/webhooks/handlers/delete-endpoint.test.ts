import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { eventually } from "../../../test/support/eventually.ts";
import { rpcCode } from "../../../test/support/rpc.ts";
import { withInstance, type InstanceSuite } from "../testing/instance.ts";

const t = suite<InstanceSuite>("DeleteEndpoint");
withInstance(t, "webhooks_delete_endpoint");

t("removes the endpoint with its delivery log and queued attempts; another product's endpoint is not found", async ({ svc, db }) => {
  const productId = randomUUID();
  const { endpoint } = await svc.client.createEndpoint({ productId, url: "http://127.0.0.1:1/hook", subscribedEvents: ["usage.threshold.50"] });
  const endpointId = endpoint!.id;
  await svc.client.publishThresholdCrossings({ crossings: [{ id: randomUUID(), productId, userId: "u1", thresholdPct: 50, currentSpend: 5, spendLimit: 10 }] });
  await eventually(async () => (await svc.client.listDeliveries({ productId, endpointId })).deliveries.length === 1, 30_000, "the delivery to be logged");
  assert.is(await rpcCode(svc.client.deleteEndpoint({ productId: randomUUID(), endpointId })), Code.NotFound);
  await svc.client.deleteEndpoint({ productId, endpointId });
  assert.is(await rpcCode(svc.client.listDeliveries({ productId, endpointId })), Code.NotFound);
  assert.is(await db.collection("deliveries").countDocuments({ endpoint_id: endpointId }), 0);
  assert.is(await rpcCode(svc.client.deleteEndpoint({ productId, endpointId })), Code.NotFound);
});

t.run();
