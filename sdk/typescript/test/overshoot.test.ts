// Concurrent calls near a cap on a default plan (no pre_call_estimate): each call in flight holds
// the user's typical call (the first one its estimate), so the cap is passed by at most the bound
// docs/concurrency-and-leases.md states. And the estimate reads the request's own output limit.
import { randomUUID } from "node:crypto";
import OpenAI from "openai";
import * as assert from "uvu/assert";
import { LimitExceededError, Meter } from "../src/index.ts";
import { meterOpenAI } from "../src/integrations/openai.ts";
import { costOf, meteredSuite, type SuiteContext } from "./metered-stack.ts";
import { startMockOpenAI } from "./mock-openai.ts";
import type { MockServer } from "./mock-server.ts";

const t = meteredSuite("overshoot", startMockOpenAI);

const CAP = 0.05;
/** What the mock answers: $0.005 a call under RATES (gpt-4o: $0.5 / $2 per 1K tokens). */
const USAGE = { input: 2, output: 2 };
const CALL = costOf("gpt-4o", USAGE.input, USAGE.output);
const ask = [{ role: "user" as const, content: "What is the weather in Paris?" }];

const client = (mock: MockServer) => new OpenAI({ apiKey: "sk-test", baseURL: `${mock.url}/v1`, maxRetries: 0 });

/** A user on a plan of its own with a $0.05 period cap and RATES' prices. */
async function userOn({ env }: SuiteContext, plan: Record<string, unknown>): Promise<string> {
  const res = await env.api.post("/config/plans", {
    plans: [{ name: `p-${randomUUID()}`, max_spend_per_period: CAP, cost_rates: { "gpt-4o": { input: 0.5, output: 2 } }, ...plan }],
  });
  assert.is(res.status, 201, JSON.stringify(res.body));
  const id = `user-${randomUUID()}`;
  assert.is((await env.api.post("/users", { external_user_id: id })).status, 201);
  const now = Date.now();
  const sub = await env.api.post(`/users/${id}/subscription`, {
    plan_id: res.body.plans[0].id,
    period_start: new Date(now - 86_400_000).toISOString(),
    period_end: new Date(now + 30 * 86_400_000).toISOString(),
  });
  assert.is(sub.status, 200, JSON.stringify(sub.body));
  return id;
}

/** 50 chat completions at once (Promise.all): how many ran, how many were refused. */
async function fifty(openai: OpenAI): Promise<{ ran: number; blocked: number }> {
  const outcomes = await Promise.allSettled(Array.from({ length: 50 }, () => openai.chat.completions.create({ model: "gpt-4o", messages: ask })));
  const refused = outcomes.filter((o) => o.status === "rejected");
  for (const o of refused) assert.instance((o as PromiseRejectedResult).reason, LimitExceededError);
  return { ran: outcomes.length - refused.length, blocked: refused.length };
}

// Every call costs the same here and reserves at least its cost, so the documented bound is one
// call's cost past the cap: the real cost of the last call admitted, nothing from the others.
const BOUND = CAP + CALL + 1e-9;

t("50 concurrent calls of a new user on a default plan at a $0.05 cap overshoot by at most the stated bound", async (ctx) => {
  const user = await userOn(ctx, {});
  ctx.mock.reply = { text: "Sunny.", usage: USAGE };
  const { ran, blocked } = await fifty(meterOpenAI(client(ctx.mock), ctx.env.meter, { user_id: user }));
  assert.is(ran + blocked, 50);
  assert.ok(ran >= 1, "the first call of a user runs");
  assert.is(ctx.mock.requests.length, ran, "a refused call sends nothing");
  const usage = await ctx.env.usage(user, (u) => u.total_tokens === ran * 4);
  assert.ok(usage.total_cost <= BOUND, `spent $${usage.total_cost} of a $${CAP} cap with ${ran} calls of $${CALL}: past the bound $${BOUND}`);
});

t("with a typical call known, 50 concurrent calls run up to the cap and overshoot by at most the bound", async (ctx) => {
  const user = await userOn(ctx, {});
  ctx.mock.reply = { text: "Sunny.", usage: USAGE };
  const openai = meterOpenAI(client(ctx.mock), ctx.env.meter, { user_id: user });
  await openai.chat.completions.create({ model: "gpt-4o", messages: ask });
  const { ran } = await fifty(openai);
  // $0.005 spent, each call in flight holds $0.005: nine more fit under $0.05.
  assert.ok(ran >= 8, `only ${ran} calls ran: the calls in flight held more than their typical cost`);
  const usage = await ctx.env.usage(user, (u) => u.total_tokens === (ran + 1) * 4);
  assert.ok(usage.total_cost <= BOUND, `spent $${usage.total_cost} of a $${CAP} cap: past the bound $${BOUND}`);
});

t("with leases: true the calls take their typical cost from the lease: 50 concurrent calls overshoot by at most the bound", async (ctx) => {
  const user = await userOn(ctx, {});
  ctx.mock.reply = { text: "Sunny.", usage: USAGE };
  const meter = new Meter({ apiKey: ctx.env.apiKey, baseURL: ctx.env.stack.apiUrl, leases: true, flushIntervalMs: 600_000, logger: { warn: () => undefined } });
  try {
    const openai = meterOpenAI(client(ctx.mock), meter, { user_id: user });
    await openai.chat.completions.create({ model: "gpt-4o", messages: ask });
    const { ran } = await fifty(openai);
    assert.ok(ran >= 1, "calls run while the lease holds something");
    assert.ok(await meter.flush(), "the meter delivered its queue");
    const usage = await ctx.env.usage(user, (u) => u.total_tokens === (ran + 1) * 4);
    assert.ok(usage.total_cost <= BOUND, `spent $${usage.total_cost} of a $${CAP} cap with leases: past the bound $${BOUND}`);
  } finally {
    await meter.shutdown();
  }
});

t("the estimate takes the request's output limit (max_tokens, max_completion_tokens, max_output_tokens) before the buffer", async (ctx) => {
  // pre_call_estimate with the default 4,096-token buffer: $8.19 a call, past the $0.05 cap.
  const user = await userOn(ctx, { pre_call_estimate: true });
  ctx.mock.reply = { text: "Sunny.", usage: { input: 2, output: 1 } };
  const openai = meterOpenAI(client(ctx.mock), ctx.env.meter, { user_id: user });
  const err = await openai.chat.completions.create({ model: "gpt-4o", messages: ask }).catch((e: unknown) => e);
  assert.instance(err, LimitExceededError);
  assert.match((err as LimitExceededError).message, /estimate of \$8\.19/);
  assert.is(ctx.mock.requests.length, 0);

  // 10 output tokens: $0.02 and the input's, under the cap.
  await openai.chat.completions.create({ model: "gpt-4o", messages: ask, max_tokens: 10 });
  await openai.chat.completions.create({ model: "gpt-4o", messages: ask, max_completion_tokens: 10 });
  await openai.responses.create({ model: "gpt-4o", input: "What is the weather in Paris?", max_output_tokens: 10 });
  assert.is(ctx.mock.requests.length, 3);
  // max_completion_tokens wins over the older max_tokens.
  const both = await openai.chat.completions.create({ model: "gpt-4o", messages: ask, max_tokens: 10, max_completion_tokens: 100_000 }).catch((e: unknown) => e);
  assert.instance(both, LimitExceededError);
  assert.is(ctx.mock.requests.length, 3);
});

t.run();
