import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { GateNoticeSchema, type WebhooksService } from "@meter/proto/meter/webhooks/v1/webhooks_pb";
import { toTimestamp } from "@meter/lib/time";
import { eventually } from "../../../test/support/eventually.ts";
import { thresholdCrossing } from "./crossings.ts";
import { Receiver } from "./receiver.ts";

/**
 * The positive signal a "nothing more was sent" check waits for, instead of a fixed time: an
 * event of the same product, queued behind everything the test did, delivered to an endpoint
 * (and receiver) of its own. Its type is one the test's endpoints do not subscribe to:
 * a gate event ("gate") or a 100% threshold crossing ("threshold").
 */
export async function laterEventDelivered(client: Client<typeof WebhooksService>, productId: string, kind: "gate" | "threshold"): Promise<void> {
  const rx = await new Receiver(() => 200).start();
  try {
    const type = kind === "gate" ? "gate_event.hard_gate" : "usage.threshold.100";
    const { endpoint } = await client.createEndpoint({ productId, url: rx.url, subscribedEvents: [type] });
    const now = new Date();
    if (kind === "gate") {
      const notice = create(GateNoticeSchema, {
        id: randomUUID(),
        productId,
        userId: `later-${randomUUID()}`,
        status: "hard_gate",
        gateReason: "total_spend",
        usagePct: 1,
        currentValue: 10,
        limitValue: 10,
        timestamp: toTimestamp(now),
      });
      await client.publishGateEvents({ events: [notice] });
    } else {
      const crossing = thresholdCrossing({
        id: randomUUID(),
        productId,
        userId: `later-${randomUUID()}`,
        pct: 100,
        periodStart: new Date(now.getTime() - 86_400_000),
        periodEnd: new Date(now.getTime() + 86_400_000),
        crossedAt: now,
      });
      await client.publishThresholdCrossings({ crossings: [crossing] });
    }
    await eventually(() => rx.received.some((r) => r.json?.type === type), 30_000, "a later event delivered");
    await client.deleteEndpoint({ productId, endpointId: endpoint!.id });
  } finally {
    await rx.stop();
  }
}
