import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Api } from "../../test/support/http.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";

const t = suite<{ stack: TestStack }>("usage ingestion over HTTP");

t.before(async (ctx) => {
  ctx.stack = await startTestStack({ services: { ingestion: { relayIntervalMs: 50 } } });
});
t.after(async (ctx) => {
  await ctx.stack.close();
});

const close = (a: number, b: number, msg?: string) => assert.ok(Math.abs(a - b) < 1e-6, `${msg ?? ""} ${a} != ${b}`);

async function planAndUser(api: Api, plan: Record<string, unknown>, userId = `u-${randomUUID()}`, dates?: { start: Date; end: Date }) {
  const plans = await api.post("/config/plans", { plans: [{ name: `p-${randomUUID()}`, ...plan }] });
  assert.is(plans.status, 201, JSON.stringify(plans.body));
  const planId = plans.body.plans[0].id;
  const u = await api.post("/users", { external_user_id: userId });
  assert.is(u.status, 201, JSON.stringify(u.body));
  const sub = await api.post(`/users/${encodeURIComponent(userId)}/subscription`, {
    plan_id: planId,
    period_start: dates?.start.toISOString(),
    period_end: dates?.end.toISOString(),
  });
  assert.is(sub.status, 200, JSON.stringify(sub.body));
  return { userId, planId };
}

function usageEvent(userId: string, over: Record<string, unknown> = {}): Record<string, any> {
  return { id: randomUUID(), user_id: userId, timestamp: new Date().toISOString(), ...over };
}

t("a batch is stored and counted; totals and breakdowns equal what was sent", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const { userId } = await planAndUser(api, { max_spend_per_period: 1000 }, undefined, {
    start: new Date(Date.now() - 86_400_000),
    end: new Date(Date.now() + 86_400_000),
  });
  const models = ["gpt-4o", "claude-3.5-sonnet", "o1"];
  const events = Array.from({ length: 300 }, (_, i) =>
    usageEvent(userId, {
      model: models[i % 3],
      input_tokens: 100 + i,
      output_tokens: 2 * i,
      tool_calls: i % 4 === 0 ? ["search", "fetch"] : [],
      cost_tokens: 0.001 * i,
      cost_tools: i % 4 === 0 ? 0.04 : 0,
    }),
  );
  const expected = { cost: 0, tokens: 0, tools: 0, tokensBy: {} as Record<string, number>, costBy: {} as Record<string, number> };
  for (const e of events) {
    const tokens = (e.input_tokens as number) + (e.output_tokens as number);
    const cost = (e.cost_tokens as number) + (e.cost_tools as number);
    expected.cost += cost;
    expected.tokens += tokens;
    expected.tools += (e.tool_calls as string[]).length;
    expected.tokensBy[e.model as string] = (expected.tokensBy[e.model as string] ?? 0) + tokens;
    expected.costBy[e.model as string] = (expected.costBy[e.model as string] ?? 0) + cost;
  }
  const res = await api.post("/events/batch", events);
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body, { accepted: 300, duplicates: 0 });

  for (const period of ["current_period", "current_month"]) {
    const usage = await api.get(`/users/${userId}/usage?period=${period}`);
    assert.is(usage.status, 200);
    assert.is(usage.body.user_id, userId);
    assert.is(usage.body.period, period);
    close(usage.body.total_cost, expected.cost, period);
    assert.is(usage.body.total_tokens, expected.tokens, JSON.stringify(usage.body));
    assert.is(usage.body.tool_calls_count, expected.tools);
    assert.equal(usage.body.tokens_by_model, expected.tokensBy);
    for (const m of models) close(usage.body.cost_by_model[m], expected.costBy[m]!, m);
  }
  const session = await api.get(`/users/${userId}/session`);
  assert.is(session.status, 200);
  close(session.body.current_usage.period_cost, expected.cost);
  assert.is(session.body.current_usage.period_tokens_total, expected.tokens);
  assert.equal(session.body.current_usage.period_tokens_by_model, expected.tokensBy);
});

t("duplicates within a batch and across batches are counted, never rejected or added twice", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const userId = `dup-${randomUUID()}`;
  await api.post("/users", { external_user_id: userId });
  const a = usageEvent(userId, { cost_total: 1, model: "m", input_tokens: 10 });
  const b = usageEvent(userId, { cost_total: 2, model: "m", input_tokens: 20 });
  assert.equal((await api.post("/events/batch", [a, a, b])).body, { accepted: 2, duplicates: 1 });
  assert.equal((await api.post("/events/batch", [b, a, usageEvent(userId, { cost_total: 4 })])).body, { accepted: 1, duplicates: 2 });
  const usage = await api.get(`/users/${userId}/usage`);
  close(usage.body.total_cost, 7);
  assert.is(usage.body.total_tokens, 30);
  assert.equal((await api.post("/events/batch", [])).body, { accepted: 0, duplicates: 0 });
});

t.run();
