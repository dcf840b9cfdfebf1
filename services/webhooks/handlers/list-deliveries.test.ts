import { randomUUID } from "node:crypto";
import { suite, test } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { eventually } from "../../../test/support/eventually.ts";
import { rpcCode } from "../../../test/support/rpc.ts";
import { withInstance, type InstanceSuite } from "../testing/instance.ts";
import { Receiver } from "../testing/receiver.ts";
import { decodeCursor, encodeCursor } from "./list-deliveries.ts";

test("cursors", () => {
  const k = { created_at: new Date("2026-11-20T10:00:00.123Z"), id: "whdel_x" };
  assert.equal(decodeCursor(encodeCursor(k)), k);
  assert.throws(() => decodeCursor("!!"));
});

test.run();

const t = suite<InstanceSuite>("ListDeliveries");
withInstance(t, "webhooks_list_deliveries");

t("pages the endpoint's delivery log by cursor and filters by status; refuses a bad limit, status or cursor", async ({ svc }) => {
  const productId = randomUUID();
  const rx = await new Receiver().start();
  try {
    const { endpoint } = await svc.client.createEndpoint({ productId, url: rx.url, subscribedEvents: ["usage.threshold.50"] });
    const endpointId = endpoint!.id;
    const crossings = Array.from({ length: 5 }, (_, i) => ({ id: randomUUID(), productId, userId: `u${i}`, thresholdPct: 50, currentSpend: 5, spendLimit: 10 }));
    await svc.client.publishThresholdCrossings({ crossings });
    await eventually(async () => (await svc.client.listDeliveries({ productId, endpointId, status: "success" })).deliveries.length === 5, 30_000, "five deliveries");
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await svc.client.listDeliveries({ productId, endpointId, limit: 2, cursor });
      assert.ok(page.deliveries.length <= 2);
      seen.push(...page.deliveries.map((d) => d.id));
      cursor = page.nextCursor;
    } while (cursor);
    assert.is(new Set(seen).size, 5);
    assert.equal((await svc.client.listDeliveries({ productId, endpointId, status: "failed" })).deliveries, []);
    for (const req of [{ limit: 201 }, { status: "lost" }, { cursor: "!!" }]) {
      assert.is(await rpcCode(svc.client.listDeliveries({ productId, endpointId, ...req })), Code.InvalidArgument, Object.keys(req).join());
    }
    assert.is(await rpcCode(svc.client.listDeliveries({ productId: randomUUID(), endpointId })), Code.NotFound);
  } finally {
    await rx.stop();
  }
});

t.run();
