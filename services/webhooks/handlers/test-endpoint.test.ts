import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcCode } from "../../../test/support/rpc.ts";
import { withInstance, type InstanceSuite } from "../testing/instance.ts";
import { Receiver, signatureValid } from "../testing/receiver.ts";

const t = suite<InstanceSuite>("TestEndpoint");
withInstance(t, "webhooks_test_endpoint", { runJobs: false });

t("sends one signed webhook.test at once, disabled or not, logs no delivery, and reports the answer", async ({ svc }) => {
  const productId = randomUUID();
  const rx = await new Receiver((n) => (n === 1 ? 200 : 500)).start();
  try {
    const { endpoint, secret } = await svc.client.createEndpoint({ productId, url: rx.url, subscribedEvents: ["gate_event.blocked"] });
    const endpointId = endpoint!.id;
    await svc.client.updateEndpoint({ productId, endpointId, updateMask: { paths: ["enabled"] }, endpoint: { enabled: false } });
    const ok = await svc.client.testEndpoint({ productId, endpointId });
    assert.equal([ok.success, ok.statusCode], [true, 200]);
    assert.is(rx.received.length, 1);
    assert.equal([rx.received[0]!.json.type, rx.received[0]!.json.data.endpoint_id, signatureValid(secret, rx.received[0]!)], ["webhook.test", endpointId, true]);
    const failed = await svc.client.testEndpoint({ productId, endpointId });
    assert.equal([failed.success, failed.statusCode], [false, 500]);
    assert.equal((await svc.client.listDeliveries({ productId, endpointId })).deliveries, []);
    assert.is(await rpcCode(svc.client.testEndpoint({ productId: randomUUID(), endpointId })), Code.NotFound);
  } finally {
    await rx.stop();
  }
});

t.run();
