// All-in-one with RPC_IN_PROCESS (the default of `npm start`): the gateway and the services
// call each other in-process instead of over loopback gRPC. The same HTTP conversation is held
// with a stack of each kind and must read the same, answer for answer; the logs show which
// way the calls went and that the request id crosses both hops of a session. (The other suites run the stack over real gRPC; test/first-run.test.ts
// runs `npm start`'s default end to end.)
import { test } from "uvu";
import * as assert from "uvu/assert";
import type { Api } from "./support/http.ts";
import { capturingLogger } from "./support/log-lines.ts";
import { startTestStack } from "./support/stack.ts";

type Exchange = { step: string; status: number; body: unknown };

const now = new Date();
const periodStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
const periodEnd = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
const at = new Date(Math.max(periodStart.getTime(), now.getTime() - 60_000)).toISOString();
const event = (id: string, model: string, input: number, output: number, cost: number) => ({
  id,
  user_id: "alice",
  timestamp: at,
  model,
  input_tokens: input,
  output_tokens: output,
  cost_tokens: cost,
  cost_total: cost,
});
const EVENTS = [
  event("6f1c2a3b-0000-4000-8000-000000000001", "gpt-4.1", 1200, 300, 0.0048),
  event("6f1c2a3b-0000-4000-8000-000000000002", "claude-haiku", 500, 100, 0.0004),
];

/** One product's session with the API: what a product does first, and what it gets wrong. */
async function conversation(api: Api): Promise<Exchange[]> {
  const out: Exchange[] = [];
  const say = async (step: string, call: Promise<{ status: number; body: unknown }>) => {
    const { status, body } = await call;
    out.push({ step, status, body });
    return body as any;
  };
  const plans = await say(
    "create plan",
    api.post("/config/plans", {
      plans: [{ name: "starter", max_spend_per_period: 10, cost_rates: { "gpt-4.1": { input: 0.002, output: 0.008 } } }],
    }),
  );
  const planId = plans.plans[0].id;
  await say("create user", api.post("/users", { external_user_id: "alice" }));
  await say(
    "subscribe",
    api.post("/users/alice/subscription", { plan_id: planId, period_start: periodStart.toISOString(), period_end: periodEnd.toISOString() }),
  );
  await say("session before usage", api.get("/users/alice/session"));
  await say("batch", api.post("/events/batch", EVENTS));
  await say("same batch again", api.post("/events/batch", EVENTS));
  await say("usage", api.get("/users/alice/usage"));
  await say("session after usage", api.get("/users/alice/session", { headers: { "x-request-id": "trace-session-1" } }));
  await say("session of an unknown user", api.get("/users/nobody/session"));
  await say("user created twice", api.post("/users", { external_user_id: "alice" }));
  await say(
    "period ending before it starts",
    api.post("/users/alice/subscription", { plan_id: planId, period_start: periodEnd.toISOString(), period_end: periodStart.toISOString() }),
  );
  await say("batch with a bad timestamp", api.post("/events/batch", [{ ...EVENTS[0], timestamp: "yesterday" }]));
  return out;
}

/** Generated ids and creation times differ from stack to stack; everything else must not. */
function comparable(exchanges: Exchange[]): Exchange[] {
  return JSON.parse(
    JSON.stringify(exchanges, (key, value) =>
      ["id", "plan_id", "service_user_id", "created_at", "updated_at"].includes(key) && typeof value === "string" ? `<${key}>` : value,
    ),
  );
}

async function converse(inProcessRpc: boolean) {
  const { logger, lines } = capturingLogger("debug");
  const stack = await startTestStack({ inProcessRpc, logger });
  try {
    const { api } = await stack.newProduct();
    return { exchanges: await conversation(api), lines };
  } finally {
    await stack.close();
  }
}

test("a stack calling in-process answers every request as the gRPC stack does, and never uses the port", async () => {
  const grpc = await converse(false);
  const local = await converse(true);
  const steps = Object.fromEntries(local.exchanges.map((e) => [e.step, e]));

  assert.equal(comparable(local.exchanges), comparable(grpc.exchanges));
  // The same, spelled out: it is the right conversation, not two equally wrong ones.
  assert.equal(
    local.exchanges.map((e) => e.status),
    [201, 201, 200, 200, 200, 200, 200, 200, 404, 409, 400, 422],
  );
  const before = steps["session before usage"]!.body as any;
  assert.is(before.plan, "starter");
  assert.is(before.sdk_enabled, true);
  assert.is(before.plan_config.max_spend_per_period, 10);
  assert.is(before.billing_period.start, periodStart.toISOString());
  assert.equal(steps["batch"]!.body, { accepted: 2, duplicates: 0 });
  assert.equal(steps["same batch again"]!.body, { accepted: 0, duplicates: 2 });
  const usage = steps["usage"]!.body as any;
  assert.is(usage.total_tokens, 2100);
  assert.ok(Math.abs(usage.total_cost - 0.0052) < 1e-9, String(usage.total_cost));
  const after = steps["session after usage"]!.body as any;
  assert.equal(after.current_usage.period_tokens_by_model, { "gpt-4.1": 1500, "claude-haiku": 600 });
  assert.match((steps["period ending before it starts"]!.body as any).detail, "period_end must be after period_start");
  assert.is((steps["batch with a bad timestamp"]!.body as any).issues[0].path, "/0/timestamp");

  // Which way the calls went: the services log every answered call with how it arrived.
  const calls = (lines: Record<string, unknown>[]) => lines.filter((l) => l.msg === "rpc ok" || l.msg === "rpc refused");
  const inProcessCalls = calls(local.lines);
  assert.equal([...new Set(inProcessCalls.map((l) => l.via))], ["in-process"]);
  for (const rpc of ["CreateProduct", "CreatePlans", "GetSession", "ResolveUsers", "IngestUsageEvents", "SetSubscription"]) {
    assert.ok(inProcessCalls.some((l) => l.rpc === rpc), `${rpc} was called in-process`);
  }
  assert.equal([...new Set(calls(grpc.lines).map((l) => l.via))], ["network"]);
  // The caller's request id travels through both hops (gateway -> ingestion -> plans) either way.
  for (const { lines } of [local, grpc]) {
    const traced = calls(lines).filter((l) => l.requestId === "trace-session-1").map((l) => l.rpc);
    assert.equal(traced.sort(), ["GetSession", "ResolveUsers"]);
  }
});

test.run();
