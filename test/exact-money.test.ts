// Exact money end to end (services over gRPC, the gateway over HTTP, webhooks to a receiver):
// 1,000 events of $0.00125 are $1.25 exactly in usage, the session view, analytics and the
// threshold webhooks, and a gate event's usage_pct of 1.0499999999999998 reads 1.05.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Receiver } from "../services/webhooks/testing/receiver.ts";
import { eventually } from "./support/eventually.ts";
import { gateEventJson } from "./support/rest.ts";
import { withWebhookStack, type TestStack } from "./support/stack.ts";

const t = suite<{ stack: TestStack; rx: Receiver }>("exact money");

withWebhookStack(t, { ingestion: { relayIntervalMs: 50 } });

const THRESHOLDS = ["usage.threshold.50", "usage.threshold.80", "usage.threshold.100"];
const GATES = ["gate_event.hard_gate"];

t("1,000 events of $0.00125 are $1.25 exactly in usage, session, analytics and threshold webhooks; usage_pct carries no noise", async ({ stack, rx }) => {
  const { api, productId } = await stack.newProduct("Exact");
  const plans = await api.post("/config/plans", { plans: [{ name: "cap-1.25", max_spend_per_period: 1.25 }] });
  assert.is(plans.status, 201, JSON.stringify(plans.body));
  const user = `user-${randomUUID()}`;
  assert.is((await api.post("/users", { external_user_id: user })).status, 201);
  const sub = await api.post(`/users/${user}/subscription`, {
    plan_id: plans.body.plans[0].id,
    period_start: new Date(Date.now() - 86_400_000).toISOString(),
    period_end: new Date(Date.now() + 29 * 86_400_000).toISOString(),
  });
  assert.is(sub.status, 200, JSON.stringify(sub.body));
  const ep = await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: [...THRESHOLDS, ...GATES] });
  assert.is(ep.status, 201, JSON.stringify(ep.body));

  // Two batches of 500 (50% after the first, 80% and 100% with the second), as float dollars
  // would sum them: 0.00125 x 500 is 0.6250000000000003 and x 1000 is 1.2500000000000007.
  const event = () => ({ id: randomUUID(), user_id: user, timestamp: new Date().toISOString(), model: "m", input_tokens: 1, cost_total: 0.00125 });
  for (let b = 0; b < 2; b++) {
    const res = await api.post("/events/batch", Array.from({ length: 500 }, event));
    assert.equal(res.body, { accepted: 500, duplicates: 0 });
  }

  const usage = (await api.get(`/users/${user}/usage`)).body;
  assert.is(usage.total_cost, 1.25, "usage total_cost");
  assert.equal(usage.cost_by_model, { m: 1.25 }, "usage cost_by_model");
  const session = (await api.get(`/users/${user}/session`)).body;
  assert.is(session.current_usage.period_cost, 1.25, "session period_cost");
  assert.equal(session.current_usage.period_cost_by_model, { m: 1.25 });

  const summary = await eventually(async () => {
    const b = (await api.get("/analytics/summary?days=1")).body;
    return b.total_events === 1000 && b;
  }, 240_000, "analytics of the 1,000 events");
  assert.is(summary.total_cost, 1.25, "analytics summary");
  const [today] = (await api.get("/analytics/timeseries?days=1")).body.data;
  assert.is(today.cost, 1.25, "analytics timeseries");
  const [top] = (await api.get("/analytics/top-users?days=1")).body.users;
  assert.equal([top.user_id, top.cost], [user, 1.25], "analytics top users");
  const [model] = (await api.get("/analytics/breakdown?days=1")).body.models;
  assert.equal([model.model, model.cost], ["m", 1.25], "analytics breakdown");

  const mine = (type: string) => rx.of(type).filter((r) => r.json?.product_id === productId);
  // The relay and the webhooks queue behind every other test on a busy machine: minutes, not seconds.
  await eventually(() => THRESHOLDS.every((type) => mine(type).length > 0), 240_000, "the three thresholds");
  const spend = Object.fromEntries(THRESHOLDS.map((type) => [type, mine(type)[0]!.json.data.current_spend]));
  assert.equal(spend, { "usage.threshold.50": 0.625, "usage.threshold.80": 1.25, "usage.threshold.100": 1.25 }, "current_spend");
  assert.equal(mine("usage.threshold.100")[0]!.json.data.cost_by_model, { m: 1.25 });

  // A client's float figures: $0.0525 of a $0.05 cap as doubles divide to 1.0499999999999998.
  const gate = gateEventJson(user, { status: "hard_gate", usage_pct: 0.0525 / 0.05, current_value: 0.035 + 0.0175, limit_value: 0.05, blocked: true });
  assert.is.not(gate.usage_pct, 1.05);
  assert.is.not(gate.current_value, 0.0525);
  assert.is((await api.post("/gate-events/batch", [gate])).status, 200);
  const [stored] = (await api.get(`/users/${user}/gate-events`)).body.events;
  assert.equal([stored.usage_pct, stored.current_value, stored.limit_value], [1.05, 0.0525, 0.05], "gate event as listed");
  const hook = await eventually(() => mine("gate_event.hard_gate")[0], 240_000, "the gate webhook");
  assert.equal([hook.json.data.usage_pct, hook.json.data.current_value], [1.05, 0.0525], "gate webhook");
});

t.run();
