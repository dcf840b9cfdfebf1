import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code, ConnectError } from "@connectrpc/connect";
import { RETRY_AFTER_HEADER } from "@meter/lib/errors";
import { eventually } from "../../../test/support/eventually.ts";
import { rpcCode } from "../../../test/support/rpc.ts";
import { withInstance, type InstanceSuite } from "../testing/instance.ts";
import { Receiver, signatureValid } from "../testing/receiver.ts";
import { TESTS_IN_FLIGHT } from "./test-endpoint.ts";

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

t("a product's tests waiting on a receiver are bounded; the next is refused with Retry-After, other products' run", async ({ svc }) => {
  const productId = randomUUID();
  let release = () => {};
  const answered = new Promise<number>((resolve) => (release = () => resolve(200)));
  const rx = await new Receiver(() => answered).start();
  const other = await new Receiver(() => 200).start();
  try {
    const { endpoint } = await svc.client.createEndpoint({ productId, url: rx.url, subscribedEvents: ["gate_event.blocked"] });
    const endpointId = endpoint!.id;
    const waiting = Array.from({ length: TESTS_IN_FLIGHT }, () => svc.client.testEndpoint({ productId, endpointId }));
    // Awaited below; kept from ending the worker should an assertion fail before.
    for (const w of waiting) w.catch(() => {});
    await eventually(() => rx.received.length === TESTS_IN_FLIGHT, 10_000, "the tests at the receiver");
    const refused = await svc.client.testEndpoint({ productId, endpointId }).catch((err: unknown) => err);
    assert.instance(refused, ConnectError);
    assert.is((refused as ConnectError).code, Code.ResourceExhausted);
    assert.is((refused as ConnectError).metadata.get(RETRY_AFTER_HEADER), "1", "a Retry-After to wait");
    const otherProduct = randomUUID();
    const { endpoint: theirs } = await svc.client.createEndpoint({ productId: otherProduct, url: other.url, subscribedEvents: ["gate_event.blocked"] });
    assert.ok((await svc.client.testEndpoint({ productId: otherProduct, endpointId: theirs!.id })).success);
    release();
    assert.ok((await Promise.all(waiting)).every((r) => r.success));
    assert.ok((await svc.client.testEndpoint({ productId, endpointId })).success, "room again once they answered");
  } finally {
    release();
    await Promise.all([rx.stop(), other.stop()]);
  }
});

t.run();
