import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcCode } from "../../../test/support/rpc.ts";
import { withInstance, type InstanceSuite } from "../testing/instance.ts";
import { Receiver, signatureValid } from "../testing/receiver.ts";

const t = suite<InstanceSuite>("RotateEndpointSecret");
withInstance(t, "webhooks_rotate_secret", { runJobs: false });

t("a new secret replaces the old: it is the one answered and the one later webhooks are signed with", async ({ svc }) => {
  const productId = randomUUID();
  const rx = await new Receiver().start();
  try {
    const { endpoint, secret: old } = await svc.client.createEndpoint({ productId, url: rx.url, subscribedEvents: ["gate_event.blocked"] });
    const endpointId = endpoint!.id;
    const { secret } = await svc.client.rotateEndpointSecret({ productId, endpointId });
    assert.ok(secret.startsWith("whsec_") && secret !== old, secret);
    assert.is((await svc.client.getEndpointSecret({ productId, endpointId })).secret, secret);
    await svc.client.testEndpoint({ productId, endpointId });
    const sent = rx.received[0]!;
    assert.equal([signatureValid(secret, sent), signatureValid(old, sent)], [true, false]);
    // Rotating twice gives another secret again.
    assert.is.not((await svc.client.rotateEndpointSecret({ productId, endpointId })).secret, secret);
  } finally {
    await rx.stop();
  }
});

t("another product's endpoint and an unknown one are NOT_FOUND, and keep their secret", async ({ svc }) => {
  const productId = randomUUID();
  const { endpoint, secret } = await svc.client.createEndpoint({ productId, url: "http://127.0.0.1:1/hook", subscribedEvents: ["gate_event.blocked"] });
  const endpointId = endpoint!.id;
  assert.is(await rpcCode(svc.client.rotateEndpointSecret({ productId: randomUUID(), endpointId })), Code.NotFound);
  assert.is(await rpcCode(svc.client.rotateEndpointSecret({ productId, endpointId: "whep_nope" })), Code.NotFound);
  assert.is(await rpcCode(svc.client.rotateEndpointSecret({ productId, endpointId: "" })), Code.NotFound);
  assert.is((await svc.client.getEndpointSecret({ productId, endpointId })).secret, secret);
});

t.run();
