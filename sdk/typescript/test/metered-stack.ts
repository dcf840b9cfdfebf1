// The whole service in-process, one product with the plans the integration tests meter
// against, a started Meter, and the service's own view of a user's usage.
import { randomUUID } from "node:crypto";
import { suite, type Test } from "uvu";
import * as assert from "uvu/assert";
import { eventually } from "../../../test/support/eventually.ts";
import type { Api } from "../../../test/support/http.ts";
import { startTestStack, type TestStack } from "../../../test/support/stack.ts";
import { Meter, type UsageEvent } from "../src/index.ts";
import { DEFAULT_REPLY, type MockServer } from "./mock-server.ts";

/** Rates per 1K tokens and per tool call, chosen so every amount is exact in binary floats. */
export const RATES = {
  "gpt-4o": { input: 0.5, output: 2 },
  "claude-sonnet-4-6": { input: 0.25, output: 1 },
};
export const TOOL_COSTS = { get_weather: 0.125, web_search: 0.25 };
export const DEFAULT_TOOL_COST = 0.0625;

export interface MeteredStack {
  stack: TestStack;
  api: Api;
  /** The product's key, for a second Meter. */
  apiKey: string;
  meter: Meter;
  /**
   * A new user on the open plan (pre-call estimates on), on a plan that blocks every call, or
   * on a $12 cap with estimates, where one held reservation (4,096 buffer tokens priced as
   * output, about $8.20 for gpt-4o) blocks the next call until it is settled.
   */
  newUser(plan?: "open" | "closed" | "capped"): Promise<string>;
  /** The service's `GET /users/{id}/usage` once the meter has flushed and `expect` holds. */
  usage(userId: string, expect?: (u: Usage) => boolean): Promise<Usage>;
  close(): Promise<void>;
}

export interface Usage {
  total_cost: number;
  total_tokens: number;
  tokens_by_model: Record<string, number>;
  cost_by_model: Record<string, number>;
  tool_calls_count: number;
}

/** Cost of one call under RATES / TOOL_COSTS, as docs/api.md prices it. */
export function costOf(model: keyof typeof RATES, input: number, output: number, tools: string[] = []): number {
  const rate = RATES[model];
  const toolCost = tools.reduce((sum, t) => sum + ((TOOL_COSTS as Record<string, number>)[t] ?? DEFAULT_TOOL_COST), 0);
  return (input / 1000) * rate.input + (output / 1000) * rate.output + toolCost;
}

export async function startMeteredStack(): Promise<MeteredStack> {
  const stack = await startTestStack();
  const { api, apiKey } = await stack.newProduct("Instrumented product");
  const res = await api.post("/config/plans", {
    plans: [
      { name: "open", cost_rates: RATES, tool_costs: TOOL_COSTS, default_tool_cost: DEFAULT_TOOL_COST, pre_call_estimate: true },
      { name: "closed", max_spend_per_period: 0, cost_rates: RATES },
      { name: "capped", max_spend_per_period: 12, cost_rates: RATES, pre_call_estimate: true },
    ],
  });
  assert.is(res.status, 201, JSON.stringify(res.body));
  const planIds = Object.fromEntries(res.body.plans.map((p: { name: string; id: string }) => [p.name, p.id]));
  // Flushes happen when the tests ask, not on a timer.
  const meter = new Meter({ apiKey, baseURL: stack.apiUrl, flushIntervalMs: 600_000, logger: { warn: () => undefined } });
  await meter.start();
  return {
    stack,
    api,
    apiKey,
    meter,
    async newUser(plan = "open") {
      const id = `user-${randomUUID()}`;
      assert.is((await api.post("/users", { external_user_id: id })).status, 201);
      const now = Date.now();
      const sub = await api.post(`/users/${id}/subscription`, {
        plan_id: planIds[plan],
        period_start: new Date(now - 86_400_000).toISOString(),
        period_end: new Date(now + 30 * 86_400_000).toISOString(),
      });
      assert.is(sub.status, 200, JSON.stringify(sub.body));
      return id;
    },
    async usage(userId, expect = () => true) {
      assert.ok(await meter.flush(), "the meter delivered its queue");
      let last: unknown;
      try {
        return await eventually(async () => {
          const r = await api.get(`/users/${userId}/usage`);
          last = r.body;
          return r.status === 200 && expect(r.body) ? (r.body as Usage) : undefined;
        }, 10_000);
      } catch (err) {
        throw new Error(`usage of ${userId} never matched; last answer ${JSON.stringify(last)}, meter ${JSON.stringify(meter.stats)}`, { cause: err });
      }
    },
    async close() {
      await meter.shutdown();
      await stack.close();
    },
  };
}

export const close = (a: number, b: number, msg = "") => assert.ok(Math.abs(a - b) < 1e-9, `${msg} ${a} != ${b}`);

export interface SuiteContext {
  env: MeteredStack;
  mock: MockServer;
  /** Every usage event the meter made, as `onUsage` saw it. */
  events: UsageEvent[];
}

/** A suite with the service, a Meter and one mock provider, the mock reset before each test. */
export function meteredSuite(name: string, startMock: () => Promise<MockServer>): Test<SuiteContext> {
  const t = suite<SuiteContext>(name);
  t.before(async (ctx) => {
    ctx.env = await startMeteredStack();
    ctx.mock = await startMock();
    ctx.events = [];
    ctx.env.meter.onUsage((e) => void ctx.events.push(e));
  });
  t.after(async ({ env, mock }) => {
    await mock.close();
    await env.close();
  });
  t.before.each(({ mock }) => {
    mock.reply = DEFAULT_REPLY;
    mock.failures = [];
    mock.silent = false;
    mock.requests.length = 0;
  });
  return t;
}
