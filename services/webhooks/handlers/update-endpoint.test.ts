import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcCode } from "../../../test/support/rpc.ts";
import { withInstance, type InstanceSuite } from "../testing/instance.ts";

const t = suite<InstanceSuite>("UpdateEndpoint");
withInstance(t, "webhooks_update_endpoint", { runJobs: false });

t("changes only the fields its mask names, a named description left unset clears it; refuses what cannot be set", async ({ svc }) => {
  const productId = randomUUID();
  const { endpoint } = await svc.client.createEndpoint({ productId, url: "http://127.0.0.1:1/a", subscribedEvents: ["gate_event.blocked"], description: "ops" });
  const endpointId = endpoint!.id;
  const update = (paths: string[], patch: Record<string, unknown>) => svc.client.updateEndpoint({ productId, endpointId, updateMask: { paths }, endpoint: patch });
  const same = await update([], { url: "http://127.0.0.1:1/ignored" });
  assert.is(same.endpoint!.url, "http://127.0.0.1:1/a");
  const off = await update(["enabled", "description"], { enabled: false, url: "http://127.0.0.1:1/ignored" });
  assert.equal([off.endpoint!.enabled, off.endpoint!.description, off.endpoint!.url], [false, undefined, "http://127.0.0.1:1/a"]);
  const moved = await update(["url", "subscribed_events"], { url: "http://127.0.0.1:1/b", subscribedEvents: ["usage.threshold.80"] });
  assert.equal([moved.endpoint!.url, moved.endpoint!.subscribedEvents], ["http://127.0.0.1:1/b", ["usage.threshold.80"]]);
  for (const [paths, patch] of [[["secret"], {}], [["url"], {}], [["enabled"], {}], [["subscribed_events"], { subscribedEvents: ["nope"] }]] as const) {
    assert.is(await rpcCode(update([...paths], patch)), Code.InvalidArgument, paths.join());
  }
  assert.is(await rpcCode(svc.client.updateEndpoint({ productId: randomUUID(), endpointId, updateMask: { paths: ["enabled"] }, endpoint: { enabled: true } })), Code.NotFound);
});

t.run();
