import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { withInstance, type InstanceSuite } from "../testing/instance.ts";

const t = suite<InstanceSuite>("ListEndpoints");
withInstance(t, "webhooks_list_endpoints", { runJobs: false });

t("the product's endpoints oldest first as created; another product's are not listed", async ({ svc }) => {
  const productId = randomUUID();
  assert.equal((await svc.client.listEndpoints({ productId })).endpoints, []);
  const created = [];
  for (const [i, events] of [["gate_event.blocked"], ["usage.threshold.50", "credits.low"], ["gate_event.soft_gate"]].entries()) {
    created.push(await svc.client.createEndpoint({ productId, url: `http://127.0.0.1:1/hook/${i}`, subscribedEvents: events, description: i === 1 ? "second" : undefined }));
  }
  await svc.client.createEndpoint({ productId: randomUUID(), url: "http://127.0.0.1:1/other", subscribedEvents: ["gate_event.blocked"] });
  const listed = (await svc.client.listEndpoints({ productId })).endpoints;
  assert.equal(listed, created.map((c) => c.endpoint!));
  assert.equal(listed.map((e) => [e.url, e.description]), [["http://127.0.0.1:1/hook/0", undefined], ["http://127.0.0.1:1/hook/1", "second"], ["http://127.0.0.1:1/hook/2", undefined]]);
});

t.run();
