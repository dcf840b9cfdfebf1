import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { withInstance, type InstanceSuite } from "../testing/instance.ts";

const t = suite<InstanceSuite>("GetEndpointSecret");
withInstance(t, "webhooks_get_secret", { runJobs: false });

t("answers the endpoint's secret, kept sealed in the database; another product's endpoint or none is NOT_FOUND", async ({ svc, db }) => {
  const productId = randomUUID();
  const { endpoint, secret } = await svc.client.createEndpoint({ productId, url: "http://127.0.0.1:1/hook", subscribedEvents: ["gate_event.blocked"] });
  const endpointId = endpoint!.id;
  assert.is((await svc.client.getEndpointSecret({ productId, endpointId })).secret, secret);
  const stored = await db.collection("endpoints").findOne({ _id: endpointId as never });
  assert.ok(stored && !JSON.stringify(stored).includes(secret), "the secret is not stored in plain text");
  for (const req of [{ productId: randomUUID(), endpointId }, { productId, endpointId: "" }, { productId, endpointId: "whep_nope" }]) {
    const err = await rpcFailure(svc.client.getEndpointSecret(req));
    assert.equal([err?.code, err?.rawMessage], [Code.NotFound, `webhook endpoint ${req.endpointId} not found`]);
  }
});

t.run();
