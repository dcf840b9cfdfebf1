import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcCode } from "../../../test/support/rpc.ts";
import { withInstance, type InstanceSuite } from "../testing/instance.ts";
import { MAX_ENDPOINTS_PER_PRODUCT } from "./create-endpoint.ts";

const t = suite<InstanceSuite>("CreateEndpoint");
withInstance(t, "webhooks_create_endpoint", { runJobs: false });

t("checks events, description and URL; subscribes each event once; stops at the endpoints a product may have", async ({ svc }) => {
  const productId = randomUUID();
  const url = "http://127.0.0.1:1/hook";
  for (const req of [{ subscribedEvents: ["usage.threshold.42"] }, { subscribedEvents: [] }, { description: "d".repeat(1001) }, { url: "ftp://example.com/hook" }]) {
    assert.is(await rpcCode(svc.client.createEndpoint({ productId, url, subscribedEvents: ["gate_event.blocked"], ...req })), Code.InvalidArgument, Object.keys(req).join());
  }
  const created = await svc.client.createEndpoint({ productId, url, subscribedEvents: ["gate_event.blocked", "gate_event.blocked"] });
  assert.equal([created.endpoint!.subscribedEvents, created.endpoint!.enabled], [["gate_event.blocked"], true]);
  assert.is((await svc.client.getEndpointSecret({ productId, endpointId: created.endpoint!.id })).secret, created.secret);
  for (let i = 1; i < MAX_ENDPOINTS_PER_PRODUCT; i++) await svc.client.createEndpoint({ productId, url, subscribedEvents: ["gate_event.blocked"] });
  assert.is(await rpcCode(svc.client.createEndpoint({ productId, url, subscribedEvents: ["gate_event.blocked"] })), Code.InvalidArgument);
  assert.is((await svc.client.listEndpoints({ productId })).endpoints.length, MAX_ENDPOINTS_PER_PRODUCT);
});

t.run();
