// One product's webhook trouble never holds back another product's deliveries, through the
// whole stack: a gate batch fanned out to the most endpoints a product may have, and an
// endpoint that never answers with hundreds of deliveries waiting. Each time another product's
// gate event, posted while the trouble is under way, reaches its receiver within seconds.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { FAST } from "../services/webhooks/testing/instance.ts";
import { Receiver } from "../services/webhooks/testing/receiver.ts";
import { eventually } from "./support/eventually.ts";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { GATE_TYPES, gateEventBody } from "./support/gate-events.ts";

const t = suite<{ stack: TestStack }>("webhooks: no noisy neighbours");

t.before(async (ctx) => {
  // The contract's 10 s attempt timeout: a hanging endpoint holds a slot that long per attempt.
  ctx.stack = await startTestStack({ services: { webhooks: { ...FAST, attemptTimeoutMs: 10_000 }, ingestion: { relayIntervalMs: 50 } } });
});
t.after(async (ctx) => {
  await ctx.stack.close();
});

/** Another product with one endpoint: posts one gate event and returns its receiver. */
async function otherProduct(stack: TestStack): Promise<{ rx: Receiver; productId: string }> {
  const rx = await new Receiver().start();
  const { api, productId } = await stack.newProduct("Neighbour");
  assert.is((await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: GATE_TYPES })).status, 201);
  const res = await api.post("/gate-events/batch", [gateEventBody("quiet-user", "soft_gate")]);
  assert.equal(res.body, { accepted: 1, duplicates: 0 });
  return { rx, productId };
}

// Arrival, not timing: the bound is generous for a busy machine, and still far below what the
// neighbour's trouble costs when it holds the queue (tens of seconds here).
const PROMPTLY_MS = 10_000;

t("a 100-event gate batch fanned out to 20 endpoints does not hold back another product's webhook", async ({ stack }) => {
  const noisy = await new Receiver().start();
  const quiet = { rx: undefined as Receiver | undefined };
  try {
    const { api } = await stack.newProduct("Fan-out");
    for (let i = 0; i < 20; i++) {
      const res = await api.post("/webhooks/endpoints", { url: `${noisy.url}?n=${i}`, subscribed_events: GATE_TYPES });
      assert.is(res.status, 201, JSON.stringify(res.body));
    }
    // The 21st endpoint is refused: a product's fan-out is bounded.
    const over = await api.post("/webhooks/endpoints", { url: `${noisy.url}?n=20`, subscribed_events: GATE_TYPES });
    assert.is(over.status, 422, JSON.stringify(over.body));
    assert.match(over.body.detail, /^a product can have at most 20 webhook endpoints/);

    // 100 blocked hard gates: 200 events, 4,000 deliveries.
    const batch = Array.from({ length: 100 }, (_, i) => gateEventBody(`user-${i}`, "hard_gate"));
    assert.equal((await api.post("/gate-events/batch", batch)).body, { accepted: 100, duplicates: 0 });
    await eventually(() => noisy.received.length > 0, 60_000, "the fan-out under way");

    const other = await otherProduct(stack);
    quiet.rx = other.rx;
    await eventually(() => other.rx.received.length === 1, PROMPTLY_MS, "the other product's webhook");
    assert.is(other.rx.received[0]!.json.product_id, other.productId);
    assert.ok(noisy.received.length < 4_000, "it arrived while the fan-out was still going on");
  } finally {
    await quiet.rx?.stop();
    await noisy.stop();
  }
});

t("an endpoint that never answers, with 200 deliveries pending, does not hold back another product's webhook", async ({ stack }) => {
  const hanging = await new Receiver(() => "hang").start();
  const quiet = { rx: undefined as Receiver | undefined };
  try {
    const { api, productId } = await stack.newProduct("Hanging");
    const ep = await api.post("/webhooks/endpoints", { url: hanging.url, subscribed_events: ["gate_event.soft_gate"] });
    assert.is(ep.status, 201);
    const batch = Array.from({ length: 200 }, (_, i) => gateEventBody(`user-${i}`, "soft_gate"));
    assert.equal((await api.post("/gate-events/batch", batch)).body, { accepted: 200, duplicates: 0 });
    await eventually(async () => {
      const log = await api.get(`/webhooks/endpoints/${ep.body.id}/deliveries?limit=200&status=pending`);
      return log.body.deliveries?.length === 200;
    }, 60_000, "200 deliveries pending");
    await eventually(() => hanging.received.length > 0, 30_000, "the endpoint hanging on its first requests");

    const other = await otherProduct(stack);
    quiet.rx = other.rx;
    await eventually(() => other.rx.received.length === 1, PROMPTLY_MS, "the other product's webhook");
    assert.is(other.rx.received[0]!.json.product_id, other.productId);
    assert.ok(hanging.received.every((r) => r.json.product_id === productId));
  } finally {
    await quiet.rx?.stop();
    await hanging.stop();
  }
});

t.run();
