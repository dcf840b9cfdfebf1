import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { toTimestamp } from "@meter/lib/time";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { withInstance, type InstanceSuite } from "../testing/instance.ts";

const t = suite<InstanceSuite>("PublishCreditEvents");
withInstance(t, "webhooks_publish_credits", { runJobs: false });

const notice = (productId: string, fields: Record<string, unknown> = {}) => ({
  id: randomUUID(),
  productId,
  userId: "u1",
  type: "credits.low",
  balance: 0.4,
  lowAt: 0.5,
  at: toTimestamp(new Date()),
  ...fields,
});

t("refuses a notice without product, user or id, or of another type, and names the field", async ({ svc, db }) => {
  const productId = randomUUID();
  await svc.client.createEndpoint({ productId, url: "http://127.0.0.1:1/hook", subscribedEvents: ["credits.low"] });
  const cases: [Record<string, unknown>, string][] = [
    [{ productId: "" }, "credit event product_id is required"],
    [{ userId: "" }, "credit event user_id (or team_id for a team's pool) is required"],
    [{ id: "" }, "credit event id is required"],
    [{ type: "credits.gone" }, "type must be one of credits.low, credits.depleted, credits.expired"],
  ];
  for (const [change, says] of cases) {
    // A bad notice refuses the whole hand-over, good ones beside it included.
    const err = await rpcFailure(svc.client.publishCreditEvents({ events: [notice(productId), notice(productId, change)] }));
    assert.equal([err?.code, err?.rawMessage], [Code.InvalidArgument, says]);
  }
  assert.is(await db.collection("events").countDocuments({ product_id: productId }), 0);
});

t("one event per notice id, for the endpoints subscribed to its type, with the data in dollars", async ({ svc, db }) => {
  const productId = randomUUID();
  const low = await svc.client.createEndpoint({ productId, url: "http://127.0.0.1:1/low", subscribedEvents: ["credits.low", "credits.expired"] });
  await svc.client.createEndpoint({ productId, url: "http://127.0.0.1:1/depleted", subscribedEvents: ["credits.depleted"] });
  const first = notice(productId);
  const expired = notice(productId, { type: "credits.expired", balance: 1, lowAt: undefined, grantId: "promo", amount: 2 });
  await svc.client.publishCreditEvents({ events: [first, first, expired] });
  await svc.client.publishCreditEvents({ events: [first] });
  const recorded = await db.collection("events").find({ product_id: productId }).sort({ type: 1 }).toArray();
  assert.equal(recorded.map((e) => [e.type, e.key, e.endpoint_ids, JSON.parse(e.data)]), [
    ["credits.expired", `credits:${expired.id}`, [low.endpoint!.id], { user_id: "u1", balance: 1, low_at: null, grant_id: "promo", amount: 2 }],
    ["credits.low", `credits:${first.id}`, [low.endpoint!.id], { user_id: "u1", balance: 0.4, low_at: 0.5 }],
  ]);
  // Another notice of the same type is another event.
  await svc.client.publishCreditEvents({ events: [notice(productId)] });
  assert.is(await db.collection("events").countDocuments({ product_id: productId, type: "credits.low" }), 2);
});

t.run();
