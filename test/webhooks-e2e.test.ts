// End to end through the gateway: plan with a spend limit, endpoint subscribed to thresholds,
// usage past 50%, 80% and 100%, each threshold webhook arriving exactly once, correctly signed,
// even when the same usage batch is posted twice.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Receiver, signatureValid } from "../services/webhooks/testing/receiver.ts";
import { eventually } from "./support/eventually.ts";
import { withWebhookStack, type TestStack } from "./support/stack.ts";

const t = suite<{ stack: TestStack; rx: Receiver }>("webhooks end to end");

withWebhookStack(t, { ingestion: { relayIntervalMs: 50 } });

const THRESHOLDS = ["usage.threshold.50", "usage.threshold.80", "usage.threshold.100"];

t("thresholds 50, 80 and 100 arrive once each, signed, though the batch is posted twice", async ({ stack, rx }) => {
  const { api, productId } = await stack.newProduct("E2E");
  const planName = `capped-${randomUUID().slice(0, 8)}`;
  const plans = await api.post("/config/plans", { plans: [{ name: planName, max_spend_per_period: 10 }] });
  assert.is(plans.status, 201, JSON.stringify(plans.body));
  const userId = `user-${randomUUID()}`;
  assert.is((await api.post("/users", { external_user_id: userId })).status, 201);
  const start = new Date(Date.now() - 86_400_000);
  const end = new Date(Date.now() + 29 * 86_400_000);
  const sub = await api.post(`/users/${encodeURIComponent(userId)}/subscription`, {
    plan_id: plans.body.plans[0].id,
    period_start: start.toISOString(),
    period_end: end.toISOString(),
  });
  assert.is(sub.status, 200, JSON.stringify(sub.body));

  const ep = await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: THRESHOLDS, description: "budget alerts" });
  assert.is(ep.status, 201);
  const secret: string = ep.body.secret;

  // Model names with dots: they are keys of the payload's cost_by_model on every store on the way.
  const event = (cost: number, model: string) => ({
    id: randomUUID(),
    user_id: userId,
    timestamp: new Date().toISOString(),
    model,
    input_tokens: 1000,
    output_tokens: 500,
    total_tokens: 1500,
    cost_tokens: cost,
    cost_total: cost,
  });
  // 5.5 (55%), then 3.0 (85%), then 2.0 (105%)
  const batches = [[event(5.5, "gpt-4.1")], [event(3.0, "claude-3.5-sonnet")], [event(2.0, "gpt-4.1")]];
  const costByModel: Record<string, Record<string, number>> = {
    "usage.threshold.50": { "gpt-4.1": 5.5 },
    "usage.threshold.80": { "gpt-4.1": 5.5, "claude-3.5-sonnet": 3.0 },
    "usage.threshold.100": { "gpt-4.1": 7.5, "claude-3.5-sonnet": 3.0 },
  };
  for (const batch of batches) {
    const first = await api.post("/events/batch", batch);
    assert.is(first.status, 200, JSON.stringify(first.body));
    const again = await api.post("/events/batch", batch);
    assert.equal(again.body, { accepted: 0, duplicates: batch.length });
  }

  await eventually(() => THRESHOLDS.every((type) => rx.of(type).length >= 1), 60_000, "all three thresholds");
  // A later event of the product through the same path (ingestion's outbox, the dispatcher), to
  // an endpoint of its own: once it is delivered, a second copy of a threshold would have been too.
  const marker = await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: ["gate_event.soft_gate"] });
  assert.is(marker.status, 201);
  const gate = { id: randomUUID(), user_id: userId, timestamp: new Date().toISOString(), status: "soft_gate", gate_reason: "total_spend", usage_pct: 0.85, current_value: 8.5, limit_value: 10 };
  assert.is((await api.post("/gate-events/batch", [gate])).status, 200);
  await eventually(() => rx.of("gate_event.soft_gate").some((r) => r.json?.product_id === productId), 60_000, "a later event delivered");
  const mine = rx.received.filter((r) => r.json?.product_id === productId && THRESHOLDS.includes(r.json.type));
  assert.equal(mine.map((r) => r.json.type).sort(), [...THRESHOLDS].sort(), "each threshold exactly once");
  for (const r of mine) {
    assert.ok(signatureValid(secret, r), `${r.json.type} signature`);
    assert.is(r.headers["x-service-delivery"], r.json.id);
    assert.is(r.headers["x-service-event"], r.json.type);
    assert.is(r.json.data.user_id, userId);
    assert.is(r.json.data.plan_name, planName);
    assert.is(r.json.data.spend_limit, 10);
    assert.is(r.json.data.threshold_pct, Number(r.json.type.split(".").pop()));
    assert.ok(r.json.data.current_spend >= (r.json.data.threshold_pct / 100) * 10 - 1e-9);
    assert.type(r.json.data.tokens_total, "number");
    assert.equal(r.json.data.cost_by_model, costByModel[r.json.type], `${r.json.type} cost_by_model`);
  }
  const log = await api.get(`/webhooks/endpoints/${ep.body.id}/deliveries`);
  assert.is(log.status, 200);
  assert.equal(log.body.deliveries.map((d: any) => d.event_type).sort(), [...THRESHOLDS].sort());
  assert.ok(log.body.deliveries.every((d: any) => d.status === "success" && d.attempt === 1 && d.status_code === 200));
});

t.run();
