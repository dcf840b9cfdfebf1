import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { toTimestamp } from "@meter/lib/time";
import { rpcCode } from "../../../test/support/rpc.ts";
import { withInstance, type InstanceSuite } from "../testing/instance.ts";

const t = suite<InstanceSuite>("PublishGateEvents");
withInstance(t, "webhooks_publish_gates", { runJobs: false });

const notice = (productId: string, fields: Record<string, unknown> = {}) => ({
  id: randomUUID(),
  productId,
  userId: "u1",
  status: "hard_gate",
  gateReason: "total_spend",
  usagePct: 1,
  currentValue: 10,
  limitValue: 10,
  blocked: true,
  timestamp: toTimestamp(new Date()),
  ...fields,
});

t("refuses a notice without product, user or reason, or of another status; a blocked hard gate is two events, a burst of them one each", async ({ svc, db }) => {
  const productId = randomUUID();
  for (const bad of [{ productId: "" }, { userId: "" }, { gateReason: "" }, { status: "open" }]) {
    assert.is(await rpcCode(svc.client.publishGateEvents({ events: [notice(productId, bad)] })), Code.InvalidArgument, Object.keys(bad).join());
  }
  const { endpoint } = await svc.client.createEndpoint({ productId, url: "http://127.0.0.1:1/hook", subscribedEvents: ["gate_event.hard_gate", "gate_event.blocked", "gate_event.soft_gate"] });
  // The same gate over and over within one window: each type once; a soft gate of another reason is another event.
  await svc.client.publishGateEvents({ events: [notice(productId), notice(productId), notice(productId, { status: "soft_gate", blocked: false, gateReason: "session_spend" })] });
  await svc.client.publishGateEvents({ events: [notice(productId)] });
  // The events recorded for the endpoint (its deliveries are made from them).
  const recorded = await db.collection("events").find({ product_id: productId, endpoint_ids: endpoint!.id }).toArray();
  const types = recorded.map((e) => e.type).sort();
  assert.equal(types, ["gate_event.blocked", "gate_event.hard_gate", "gate_event.soft_gate"]);
});

t("users whose ids and reasons join to the same text each have their gate event", async ({ svc, db }) => {
  const productId = randomUUID();
  await svc.client.createEndpoint({ productId, url: "http://127.0.0.1:1/hook", subscribedEvents: ["gate_event.hard_gate"] });
  await svc.client.publishGateEvents({
    events: [notice(productId, { userId: "x", gateReason: "team:total_spend", blocked: false }), notice(productId, { userId: "x:team", gateReason: "total_spend", blocked: false })],
  });
  const recorded = await db.collection("events").find({ product_id: productId }).toArray();
  assert.equal(recorded.map((e) => JSON.parse(e.data as string).user_id).sort(), ["x", "x:team"]);
});

t("a hard gate of prepaid credits that ran out carries them into the webhook's data; other metadata stays out", async ({ svc, db }) => {
  const productId = randomUUID();
  await svc.client.createEndpoint({ productId, url: "http://127.0.0.1:1/hook", subscribedEvents: ["gate_event.hard_gate", "gate_event.soft_gate"] });
  await svc.client.publishGateEvents({
    events: [
      notice(productId, { userId: "prepaid", blocked: false, metadata: { credits: { balance: 0, low_at: 0.5 }, order: "o-1" } }),
      notice(productId, { userId: "capped", blocked: false, metadata: { order: "o-2" } }),
      notice(productId, { userId: "soft", status: "soft_gate", blocked: false, metadata: { credits: { balance: 1, low_at: null } } }),
    ],
  });
  const recorded = await db.collection("events").find({ product_id: productId }).toArray();
  const data = Object.fromEntries(recorded.map((e) => JSON.parse(e.data as string)).map((d) => [d.user_id, d]));
  assert.equal(data.prepaid.credits, { balance: 0, low_at: 0.5 });
  assert.is(data.prepaid.order, undefined);
  assert.is("credits" in data.capped, false);
  assert.is("credits" in data.soft, false);
});

t.run();
