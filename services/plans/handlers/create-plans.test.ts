import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { failure, product, withPlans, type PlansSuite } from "../testing/suite.ts";

const t = suite<PlansSuite>("CreatePlans over gRPC");
withPlans(t);

t("creates plans with every default filled in and request-wide gates applied", async ({ client }) => {
  const productId = product();
  const res = await client.createPlans({
    productId,
    softGateAt: 0.5,
    plans: [{ name: "free", maxSpendPerPeriod: 0 }, { name: "pro", softGateAt: 0.9, hardGateAt: 0.95 }],
  });
  assert.equal(res.duplicates, []);
  const [free, pro] = res.plans;
  assert.is(free!.name, "free");
  assert.is(free!.maxSpendPerPeriod, 0);
  assert.is(free!.maxSpendPerSession, undefined);
  assert.is(free!.sessionTimeoutMinutes, 30);
  assert.is(free!.softGateAt, 0.5);
  assert.is(free!.hardGateAt, 1);
  assert.is(free!.defaultToolCost, 0.02);
  assert.is(free!.preCallEstimate, false);
  assert.is(free!.preCallBufferTokens, 4096n);
  assert.is(free!.defaultCostRate, undefined);
  assert.equal(free!.modelLimits, {});
  assert.is(pro!.softGateAt, 0.9);
  assert.is(pro!.hardGateAt, 0.95);
  assert.is(pro!.maxSpendPerPeriod, undefined);
});

t("keeps maps keyed by dotted model names", async ({ client }) => {
  const productId = product();
  const res = await client.createPlans({
    productId,
    plans: [
      {
        name: "maps",
        modelLimits: { "gpt-4.1": { maxTokensPerPeriod: 1_000_000n } },
        costRates: { "gpt-4.1": { input: 0.002, output: 0.008 }, "claude-3.5": { input: 0.003, output: 0.015 } },
        toolCosts: { "web.search": 0.01 },
        defaultCostRate: { input: 0.001, output: 0.002 },
      },
    ],
  });
  const [listed] = (await client.listPlans({ productId })).plans;
  assert.equal(listed!.modelLimits["gpt-4.1"]!.maxTokensPerPeriod, 1_000_000n);
  assert.equal(listed!.costRates["claude-3.5"]!.output, 0.015);
  assert.is(listed!.toolCosts["web.search"], 0.01);
  assert.is(listed!.defaultCostRate!.output, 0.002);
  assert.is(listed!.id, res.plans[0]!.id);
});

t("skips existing names, reports them, and refuses a request of duplicates only", async ({ client }) => {
  const productId = product();
  await client.createPlans({ productId, plans: [{ name: "a" }] });
  const res = await client.createPlans({ productId, plans: [{ name: "a" }, { name: "b" }, { name: "b" }] });
  assert.equal(res.plans.map((p) => p.name), ["b"]);
  assert.equal(res.duplicates, ["a", "b"]);
  const err = await failure(client.createPlans({ productId, plans: [{ name: "a" }, { name: "b" }] }));
  assert.is(err.code, Code.AlreadyExists);
  assert.is((await client.listPlans({ productId })).plans.length, 2);
  // Another product may use the same names.
  const other = await client.createPlans({ productId: product(), plans: [{ name: "a" }] });
  assert.is(other.plans.length, 1);
});

t("rejects invalid plans, naming each problem, and creates none of the request", async ({ client }) => {
  const productId = product();
  const cases: [string, Parameters<typeof client.createPlans>[0]][] = [
    ["soft_gate_at", { productId, plans: [{ name: "x", softGateAt: 1.5 }] }],
    ["hard_gate_at", { productId, plans: [{ name: "x", hardGateAt: -0.1 }] }],
    ["must not exceed", { productId, plans: [{ name: "x", softGateAt: 0.9, hardGateAt: 0.5 }] }],
    ["must not exceed", { productId, softGateAt: 0.9, hardGateAt: 0.5, plans: [{ name: "x" }] }],
    ["max_spend_per_period", { productId, plans: [{ name: "x", maxSpendPerPeriod: -1 }] }],
    ["max_spend_per_session", { productId, plans: [{ name: "x", maxSpendPerSession: Number.NaN }] }],
    ["session_timeout_minutes", { productId, plans: [{ name: "x", sessionTimeoutMinutes: 0 }] }],
    ["cost_rates.m.input", { productId, plans: [{ name: "x", costRates: { m: { input: -1, output: 0 } } }] }],
    ["tool_costs.t", { productId, plans: [{ name: "x", toolCosts: { t: -0.5 } }] }],
    ["max_tokens_per_period", { productId, plans: [{ name: "x", modelLimits: { m: { maxTokensPerPeriod: -5n } } }] }],
    ["pre_call_buffer_tokens", { productId, plans: [{ name: "x", preCallBufferTokens: -1n }] }],
    ["name", { productId, plans: [{ name: "" }] }],
    ["name", { productId, plans: [{}] }],
    ["name", { productId, plans: [{ name: "n".repeat(256) }] }],
    ["plans[1].default_tool_cost", { productId, plans: [{ name: "ok" }, { name: "y", defaultToolCost: -1 }] }],
    ["at least one", { productId, plans: [] }],
    ["product_id", { productId: "", plans: [{ name: "x" }] }],
  ];
  for (const [needle, req] of cases) {
    const err = await failure(client.createPlans(req));
    assert.is(err.code, Code.InvalidArgument, needle);
    assert.ok(err.rawMessage.includes(needle), `${needle} not in: ${err.rawMessage}`);
  }
  assert.equal((await client.listPlans({ productId })).plans, []);
});

t("a limit's scope is team or member (unset: team), stored and answered; anything else names the limit and the field", async ({ client }) => {
  const productId = product();
  const limit = { metric: "spend", max: 50, window: "month" };
  const res = await client.createPlans({
    productId,
    plans: [{ name: "team", limits: [{ name: "seat", ...limit, scope: "member" }, { name: "all", ...limit, scope: "team" }, { name: "unset", ...limit }] }],
  });
  assert.equal(res.plans[0]!.limits.map((l) => l.scope), ["member", "team", undefined]);
  const [listed] = (await client.listPlans({ productId })).plans;
  assert.equal(listed!.limits.map((l) => l.scope), ["member", "team", undefined]);
  const err = await failure(client.createPlans({ productId, plans: [{ name: "bad", limits: [{ name: "seat", ...limit, scope: "org" }] }] }));
  assert.is(err.code, Code.InvalidArgument);
  assert.ok(err.rawMessage.includes('limits[0] ("seat").scope'), err.rawMessage);
});

t.run();
