// Names users choose (models, tools, plan keys) that are also members of Object.prototype, and
// an outbox entry its peer refuses: neither may misprice an event nor stop another product's
// analytics.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MongoClient } from "mongodb";
import { OutboxStore, entry } from "../services/ingestion/store/outbox.ts";
import { eventually } from "./support/eventually.ts";
import type { Api } from "./support/http.ts";
import { withTestStack, type TestStack } from "./support/stack.ts";

const MAX_ATTEMPTS = 3;
const t = suite<{ stack: TestStack; mongo: MongoClient }>("poison names and poison outbox entries");

withTestStack(t, { services: { ingestion: { relayIntervalMs: 100, relayMaxAttempts: MAX_ATTEMPTS } } });

const DAY = 86_400_000;
const near = (a: number, b: number, msg: string) => assert.ok(Math.abs(a - b) < 1e-9, `${msg}: ${a} != ${b}`);

async function subscribed(api: Api, plan: Record<string, unknown>): Promise<string> {
  const created = await api.post("/config/plans", { plans: [{ name: `p-${randomUUID()}`, ...plan }] });
  assert.is(created.status, 201, JSON.stringify(created.body));
  const user = `u-${randomUUID()}`;
  assert.is((await api.post("/users", { external_user_id: user })).status, 201);
  const sub = await api.post(`/users/${user}/subscription`, {
    plan_id: created.body.plans[0].id,
    period_start: new Date(Date.now() - DAY).toISOString(),
    period_end: new Date(Date.now() + 20 * DAY).toISOString(),
  });
  assert.is(sub.status, 200, JSON.stringify(sub.body));
  return user;
}

/** Usage events of a second product, and the wait until its analytics counts them. */
async function neighbourFlows(stack: TestStack, count: number): Promise<void> {
  const { api } = await stack.newProduct("neighbour");
  await api.post("/users", { external_user_id: "n" });
  const now = new Date().toISOString();
  const batch = Array.from({ length: count }, () => ({ id: randomUUID(), user_id: "n", timestamp: now, model: "gpt-4o", cost_total: 0.5, total_tokens: 10 }));
  const sent = await api.post("/events/batch", batch);
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  await eventually(async () => (await api.get("/analytics/summary?days=1")).body.total_events === count, 30_000, "the neighbour's events in its analytics");
}

const POISON = ["constructor", "__proto__", "toString", "hasOwnProperty"];

t("models and tools named like Object.prototype's members are priced as the plan says", async ({ stack }) => {
  const { api } = await stack.newProduct("poison");
  const user = await subscribed(api, {
    max_spend_per_period: 1000,
    cost_rates: { constructor: { input: 1, output: 2 }, toString: { input: 3, output: 4 } },
    model_limits: { hasOwnProperty: { max_tokens_per_period: 100_000 } },
    default_cost_rate: { input: 0.1, output: 0.2 },
    tool_costs: { constructor: 0.25, toString: 0.5 },
    default_tool_cost: 0.01,
  });
  const manual = (model: string, tools: string[] = []) =>
    api.post("/events", { user_id: user, model, input_tokens: 1000, output_tokens: 1000, tool_calls: tools });

  const expected = new Map<string, number>();
  const cases: [string, string, string[], number][] = [
    // [model sent, normalized model, tools, cost]
    ["constructor", "constructor", POISON, 3 + 0.25 + 0.01 + 0.5 + 0.01],
    ["toString-2024-08-06", "toString", [], 7],
    ["__proto__", "__proto__", ["__proto__"], 0.3 + 0.01],
    ["hasOwnProperty", "hasOwnProperty", ["hasOwnProperty"], 0.3 + 0.01],
    ["valueOf", "valueOf", ["valueOf"], 0.3 + 0.01],
  ];
  for (const [sent, model, tools, cost] of cases) {
    const res = await manual(sent, tools);
    assert.is(res.status, 201, `${sent}: ${JSON.stringify(res.body)}`);
    assert.is(res.body.model, model);
    near(res.body.cost, cost, `cost of ${sent}`);
    expected.set(model, (expected.get(model) ?? 0) + cost);
  }
  // Batch events named so: counted by model in the user's usage like any other name.
  const now = new Date().toISOString();
  const batch = POISON.map((m) => ({ id: randomUUID(), user_id: user, timestamp: now, model: m, cost_total: 1, total_tokens: 7 }));
  const sent = await api.post("/events/batch", batch);
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  for (const m of POISON) expected.set(m, expected.get(m)! + 1);

  const usage = await api.get(`/users/${user}/usage`);
  assert.is(usage.status, 200, JSON.stringify(usage.body));
  const byModel = usage.body.cost_by_model as Record<string, number>;
  assert.equal(Object.keys(byModel).sort(), [...expected.keys()].sort(), "one entry per model, __proto__ included");
  for (const [m, c] of expected) near(byModel[m]!, c, `cost_by_model.${m}`);
  assert.is(usage.body.tokens_by_model.__proto__, 2000 + 7);

  // Leases: a token cap only where the plan's own model_limits names the model.
  const capped = await api.post(`/users/${user}/leases`, { holder: "h1", need: 0, want: 0, model: "hasOwnProperty", need_tokens: 10, want_tokens: 10 });
  assert.is(capped.status, 200, JSON.stringify(capped.body));
  assert.is(capped.body.lease.tokens.model, "hasOwnProperty");
  assert.is(capped.body.lease.tokens.added, 10);
  for (const model of ["constructor", "__proto__", "toString"]) {
    const res = await api.post(`/users/${user}/leases`, { holder: "__proto__", need: 1, want: 1, model });
    assert.is(res.status, 200, `${model}: ${JSON.stringify(res.body)}`);
    assert.is(res.body.lease.tokens, null, `${model} has no token cap`);
    assert.ok(res.body.lease.granted > 0, "the spend cap is leased");
  }

  // Every one of them reached analytics, and another product's analytics flows.
  await neighbourFlows(stack, 3);
  const total = cases.length + POISON.length;
  await eventually(async () => (await api.get("/analytics/summary?days=1")).body.total_events === total, 30_000, "the events in analytics");
  const breakdown = await api.get("/analytics/breakdown?days=1");
  assert.equal(new Set(breakdown.body.models.map((m: { model: string }) => m.model)), new Set(expected.keys()));
});

t("credit grants named like Object.prototype's members are held, drawn, listed and voided as any other", async ({ stack }) => {
  const { api } = await stack.newProduct("poison grants");
  const user = await subscribed(api, { max_spend_per_period: 0, credits_enabled: true });
  // Drawn lowest priority first: "toString", then "constructor", then "__proto__".
  for (const [id, priority] of [["__proto__", 30], ["constructor", 20], ["toString", 10]] as const) {
    const res = await api.post(`/users/${user}/credits`, { id, amount: 1, kind: "paid", priority });
    assert.is(res.status, 201, `${id}: ${JSON.stringify(res.body)}`);
    assert.is(res.body.remaining, 1, `${id}'s remaining`);
  }
  // A grant id that is absent but names a member of Object.prototype is unknown, not a grant.
  assert.is((await api.post(`/users/${user}/credits/hasOwnProperty/void`, {})).status, 404);

  const spent = await api.post("/events", { user_id: user, model: "m", cost: 1.25 });
  assert.is(spent.status, 201, JSON.stringify(spent.body));
  const credits = await eventually(
    async () => {
      const c = await api.get(`/users/${user}/credits`);
      return Math.abs(c.body.balance - 1.75) < 1e-9 ? c.body : null;
    },
    30_000,
    "the usage drawn from the grants",
  );
  const byId = new Map((credits.grants as { id: string; remaining: number; status: string }[]).map((g) => [g.id, g]));
  assert.equal([...byId.keys()].sort(), ["__proto__", "constructor", "toString"]);
  assert.is(byId.get("toString")!.status, "depleted");
  near(byId.get("constructor")!.remaining, 0.75, "constructor's remaining");
  assert.is(byId.get("__proto__")!.remaining, 1);

  const voided = await api.post(`/users/${user}/credits/constructor/void`, {});
  assert.is(voided.status, 200, JSON.stringify(voided.body));
  assert.is(voided.body.status, "voided");
  const after = await api.get(`/users/${user}/credits`);
  near(after.body.balance, 1, "the balance after the void");
  const ledger = await api.get(`/users/${user}/credits/ledger?limit=200`);
  const entries = ledger.body.entries as { type: string; grant_id: string | null; amount: number }[];
  near(entries.filter((e) => e.type === "grant").reduce((s, e) => s + e.amount, 0), 3, "three grants in the ledger");
  near(entries.filter((e) => e.type === "void" && e.grant_id === "constructor").reduce((s, e) => s + e.amount, 0), -0.75, "the void in the ledger");
});

t("an outbox entry its peer refuses is set aside without holding back the entries behind it", async ({ stack, mongo }) => {
  const outbox = new OutboxStore(mongo.db(`${stack.dbPrefix}_ingestion`));
  // Stored before any other entry, so it is first in line; analytics refuses a NaN cost.
  const poison = entry("usage", `job_poison_${randomUUID()}`, [
    { product_id: randomUUID(), event_id: randomUUID(), user_id: "x", timestamp: new Date(), model: "m", total_tokens: 1, cost_total: Number.NaN, source: "auto", tool_call_count: 0 },
  ]);
  await outbox.analytics.insertOne(poison);

  await neighbourFlows(stack, 5);
  const aside = await eventually(() => outbox.analytics.findOne({ _id: poison._id, set_aside_at: { $exists: true } }), 30_000, "the entry set aside");
  assert.is(aside.attempts, MAX_ATTEMPTS);
  assert.match(aside.last_error ?? "", /cost/);
  const metrics = { body: await (await fetch(`${stack.rpcUrl}/metrics`)).text() };
  assert.match(metrics.body, /meter_outbox_set_aside\{name="ingestion_to_analytics"\} 1/);
  assert.match(metrics.body, /meter_outbox_set_aside_total\{name="usage->analytics"\} 1/);
  assert.match(metrics.body, /meter_outbox_depth\{name="ingestion_to_analytics"\} 0/, "a set-aside entry is not waiting");

  // Fixed and replayed, it is handed over like any other.
  const fixed = entry("usage", "x", [{ product_id: randomUUID(), event_id: randomUUID(), user_id: "x", timestamp: new Date(), model: "m", total_tokens: 1, cost_total: 0.5, source: "auto", tool_call_count: 0 }]);
  await outbox.analytics.updateOne({ _id: poison._id }, { $set: { payloads: fixed.payloads } });
  assert.is(await outbox.replay(outbox.analytics, [poison._id]), 1);
  await eventually(async () => (await outbox.analytics.countDocuments({ _id: poison._id })) === 0, 30_000, "the replayed entry handed over");
});

t.run();
