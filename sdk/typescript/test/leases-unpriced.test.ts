import { suite } from "uvu";
import * as assert from "uvu/assert";
import { LimitExceededError, Meter, type UsageEvent } from "../src/index.ts";
import { runReplicas } from "../../../bench/lease-run.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { createTeam, createUser, memoryLogger, type ProductCtx, startWithProduct, stopAll, usage } from "./support/fixtures.ts";

const t = suite<ProductCtx>("sdk: leases on a plan without cost rates (calls estimated at 0, priced once they ran)");

t.before(async (ctx) => {
  await startWithProduct(ctx, "sdk leases unpriced");
});
t.after(async (ctx) => {
  await stopAll(ctx.stack, [], []);
});

const CAP = 1;
/** What each call costs: one use of tool "t"; its tokens cost nothing (no cost rates), so every estimate is 0. */
const CALL_COST = 0.1;
const CALL = { model: "m", input_tokens: 1000 };
const USED = { input_tokens: 1000, output_tokens: 500, tool_calls: ["t"] };

/** A user on a $1 plan without cost rates whose calls cost $0.10 each. */
function unpricedUser(ctx: ProductCtx, preCallEstimate: boolean): Promise<string> {
  return createUser(ctx.api, { max_spend_per_period: CAP, tool_costs: { t: CALL_COST }, pre_call_estimate: preCallEstimate });
}

/** Sequential calls until one is refused; the calls that ran and the refusal. */
async function callUntilRefused(m: Meter, user: string): Promise<{ calls: number; refusal: LimitExceededError }> {
  for (let calls = 0; calls < 100; calls++) {
    try {
      await m.call(user, { ...CALL, usage: () => USED }, () => "ok");
    } catch (err) {
      assert.instance(err, LimitExceededError);
      return { calls, refusal: err as LimitExceededError };
    }
  }
  throw new Error("100 calls ran on a $1 cap");
}

for (const preCallEstimate of [false, true]) {
  t(`pre_call_estimate ${preCallEstimate}: calls run from slices sized by what calls really cost, until total_spend blocks them; the cap is passed by at most one call`, async (ctx) => {
    const user = await unpricedUser(ctx, preCallEstimate);
    const m = new Meter({ apiKey: ctx.apiKey, baseURL: ctx.stack.apiUrl, logger: memoryLogger(), leases: true });
    const events: UsageEvent[] = [];
    m.onUsage((e) => events.push(e));
    const { calls, refusal } = await callUntilRefused(m, user);
    await m.shutdown();
    const spend = (await usage(ctx.api, user)).total_cost;
    console.log(`    pre_call_estimate ${preCallEstimate}: ${calls} calls, $${spend} counted of a $${CAP} cap`);
    assert.is(refusal.result.gate_reason, "total_spend");
    assert.ok(calls >= 5, `${calls} calls ran`);
    assert.ok(events.every((e) => e.lease_id !== undefined), "every call spent from the lease");
    assert.ok(Math.abs(spend - calls * CALL_COST) < 1e-6);
    assert.ok(spend <= CAP + CALL_COST + 1e-6, `$${spend} counted: at most one call past the cap`);
  });
}

t("a team's cap: the team's slice is sized the same way, and the team's cap is passed by at most one call", async (ctx) => {
  // The member's own plan caps nothing (only the team's can stop its calls) and prices its tool.
  const member = await createUser(ctx.api, { max_spend_per_period: null, tool_costs: { t: CALL_COST } });
  const teamId = await createTeam(ctx.api, { max_spend_per_period: CAP }, [member]);
  const m = new Meter({ apiKey: ctx.apiKey, baseURL: ctx.stack.apiUrl, logger: memoryLogger(), leases: true });
  const { calls, refusal } = await callUntilRefused(m, member);
  await m.shutdown();
  const teamSpend = async () => (await ctx.api.get(`/teams/${teamId}/usage`)).body.total_cost as number;
  await eventually(async () => Math.abs((await teamSpend()) - calls * CALL_COST) < 1e-6, 30_000, "the team's usage to count every call");
  const spend = await teamSpend();
  console.log(`    team cap: ${calls} calls, $${spend} counted of a $${CAP} cap`);
  assert.is(refusal.result.gate_reason, "team:total_spend");
  assert.ok(calls >= 5, `${calls} calls ran`);
  assert.ok(spend <= CAP + CALL_COST + 1e-6, `$${spend} counted: at most one call past the team's cap`);
});

t("what another holder leaves: the lease blocks the calls once its slices are spent, passing them by at most one call", async (ctx) => {
  const user = await unpricedUser(ctx, true);
  const m = new Meter({ apiKey: ctx.apiKey, baseURL: ctx.stack.apiUrl, logger: memoryLogger(), leases: true });
  await m.guard(user, { model: "m" }); // loads the view
  // Another holder takes $0.55: $0.45 is left for this process, far below what its own view would let it spend.
  const other = await ctx.api.post(`/users/${user}/leases`, { holder: "other", need: 0.55, want: 0.55 });
  assert.is(other.body.lease.added, 0.55, JSON.stringify(other.body));
  const { calls, refusal } = await callUntilRefused(m, user);
  await m.shutdown();
  const spend = (await usage(ctx.api, user)).total_cost;
  console.log(`    $0.45 left by another holder: ${calls} calls, $${spend} counted`);
  assert.is(refusal.result.gate_reason, "total_spend");
  assert.match(refusal.message, /no budget lease covers this call/);
  assert.ok(calls >= 3, `${calls} calls ran`);
  assert.ok(spend <= 0.45 + CALL_COST + 1e-6, `$${spend} counted of the $0.45 left: at most one call past it`);
});

t("two replica processes, one call at a time each: the cap is passed by at most one call per replica", async (ctx) => {
  const user = await unpricedUser(ctx, false);
  const r = await runReplicas(ctx.api, { baseUrl: ctx.stack.apiUrl, apiKey: ctx.apiKey, userId: user, replicas: 2, concurrency: 1, leases: true, together: true, callCost: CALL_COST, tool: "t", settleMs: 120_000 });
  console.log(`    2 replicas: ${r.replicas.map((x) => x.calls).join(" + ")} calls, $${r.spend} counted of a $${CAP} cap, ${r.leaseRequests} lease requests`);
  assert.ok(r.replicas.every((x) => x.calls > 0), "both replicas were served");
  assert.ok(r.replicas.every((x) => (x.reasons ?? []).every((reason) => reason.startsWith("total_spend "))), JSON.stringify(r.replicas.map((x) => x.reasons)));
  assert.ok(Math.abs(r.spend - r.calls * CALL_COST) < 1e-6, `$${r.spend} counted for ${r.calls} calls`);
  assert.ok(r.spend <= CAP + 2 * CALL_COST + 1e-6, `$${r.spend} counted: at most one call past the cap per replica`);
});

t.run();
