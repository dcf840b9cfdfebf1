// Prepaid credits against the real stack: a pure-prepaid user blocked once its grant is spent
// (the error and the 429 name the credits), running again after a top-up (its blocked calls
// read the view again); the callbacks; and
// 1,000 concurrent calls in 4 replica processes with leases on a $5 balance: no overdraft, and
// the ledger's usage equal to the usage counted.
import { randomUUID } from "node:crypto";
import * as assert from "uvu/assert";
import { runReplicas } from "../../../bench/lease-run.ts";
import { eventually } from "../../../test/support/eventually.ts";
import type { Api } from "../../../test/support/http.ts";
import { creditsOf, ledgerOf } from "../../../test/support/rest.ts";
import { limitBody } from "../src/http/limit-response.ts";
import { LimitExceededError, type CreditsEvent } from "../src/index.ts";
import { createUser, memoryLogger, near, rejects, stackMeter, stackSuite, usage } from "./support/fixtures.ts";

const t = stackSuite("sdk: prepaid credits against the stack", "sdk credits");

async function grant(api: Api, userId: string, id: string, amount: number): Promise<void> {
  const res = await api.post(`/users/${userId}/credits`, { id, amount });
  assert.is(res.status, 201, JSON.stringify(res.body));
}

const credits = (api: Api, userId: string): Promise<{ balance: number; overdraft: number; pending: number }> => creditsOf(api, `/users/${userId}`);
const ledger = (api: Api, userId: string) => ledgerOf(api, `/users/${userId}`, 100);

/** $1 per 1K tokens: a call of 200 tokens costs $0.20. */
const PREPAID = { max_spend_per_period: 0, credits_enabled: true, credits_low_at: 0.5, cost_rates: { m: { input: 1, output: 1 } } };
const CALL = { model: "m", input_tokens: 100, output_tokens: 100 };

t("pure prepaid: a $1.00 grant runs calls until spent, then the block names total_spend and the credits; a top-up lets calls run again; low fires once per crossing, depleted once", async (ctx) => {
  const user = await createUser(ctx.api, PREPAID);
  await grant(ctx.api, user, `g-${randomUUID()}`, 1);
  const m = stackMeter(ctx, { logger: memoryLogger() });
  const seen: [string, CreditsEvent][] = [];
  m.onCreditsLow((e) => void seen.push(["low", e]));
  m.onCreditsDepleted((e) => void seen.push(["depleted", e]));
  m.onCreditsExpired((e) => void seen.push(["expired", e]));
  for (let i = 0; i < 5; i++) {
    await m.guard(user, { model: "m" });
    await m.record(user, CALL);
    if (i === 1) assert.equal(seen, [], "no crossing at $0.60 left");
  }
  assert.equal(seen, [
    ["low", { userId: user, balance: 0.4, lowAt: 0.5 }],
    ["depleted", { userId: user, balance: 0, lowAt: 0.5 }],
  ]);
  assert.equal(m.state(user)!.credits, { balance: 0, pending: 0, low_at: 0.5 });
  const err = (await rejects(() => m.guard(user, { model: "m" }), LimitExceededError)) as LimitExceededError;
  assert.is(err.reason, "total_spend");
  assert.equal(err.credits, { balance: 0, lowAt: 0.5 });
  assert.equal(limitBody(err).credits, { balance: 0, low_at: 0.5 });
  // Prepaid only: a new period brings nothing, so no reset to wait for (no Retry-After); a grant lifts it.
  assert.is(err.resetsAt, null);
  assert.is(err.result.resets_at, null);
  assert.is(limitBody(err).resets_at, null);
  // The service's dimension says the same (the library's view, the portal and Retry-After read it).
  const total = ((await ctx.api.get(`/users/${user}/limits`)).body.limits as { reason: string; resets_at: string | null }[]).find((d) => d.reason === "total_spend")!;
  assert.is(total.resets_at, null);
  assert.ok(await m.flush());
  // The gate event of the block says the credits ran out, as the error does.
  const gates = (await ctx.api.get(`/users/${user}/gate-events?status=hard_gate`)).body.events as { gate_reason: string; metadata: Record<string, unknown> }[];
  assert.equal(gates.map((g) => [g.gate_reason, g.metadata.credits]), [["total_spend", { balance: 0, low_at: 0.5 }]]);
  // The service counted the same: its balance is spent, nothing overdrawn.
  let last: unknown;
  await eventually(async () => {
    const c = (last = await credits(ctx.api, user));
    return near(c.balance, 0) && near(c.overdraft, 0);
  }, 20_000).catch((err) => { throw new Error(`the service's credits: ${JSON.stringify(last)}`, { cause: err }); });

  // A top-up: the blocked user's calls read the view again (every 5 s at most) and run once it shows the grant.
  await grant(ctx.api, user, `g-${randomUUID()}`, 1);
  await eventually(() => m.guard(user, { model: "m" }).then(() => true, (e) => (e instanceof LimitExceededError ? undefined : Promise.reject(e))), 30_000);
  assert.equal(m.state(user)!.credits, { balance: 1, pending: 0, low_at: 0.5 });
  await m.guard(user, { model: "m" });
  for (let i = 0; i < 3; i++) await m.record(user, CALL);
  assert.equal(seen.slice(2), [["low", { userId: user, balance: 0.4, lowAt: 0.5 }]], "the grant armed the low mark again");
  assert.ok(await m.flush());
  await eventually(async () => near((await credits(ctx.api, user)).balance, 0.4), 20_000);
  assert.ok(near((await usage(ctx.api, user)).total_cost, 1.6));
});

t("a grant the view lists as expiring: onCreditsExpired at its expires_at with what it had left, the cap lowered by it", async (ctx) => {
  const user = await createUser(ctx.api, PREPAID);
  const expiresAt = new Date(Date.now() + 3_000).toISOString();
  const res = await ctx.api.post(`/users/${user}/credits`, { id: "promo", amount: 0.5, kind: "promotional", expires_at: expiresAt });
  assert.is(res.status, 201, JSON.stringify(res.body));
  await grant(ctx.api, user, "paid", 1);
  const m = stackMeter(ctx, { logger: memoryLogger() });
  const expired: CreditsEvent[] = [];
  m.onCreditsExpired((e) => void expired.push(e));
  await m.guard(user, { model: "m" });
  assert.equal(m.state(user)!.credits, { balance: 1.5, pending: 0, low_at: 0.5 });
  // The user's calls see the expiry once its time has come.
  await eventually(async () => {
    await m.guard(user, { model: "m" });
    return expired.length > 0;
  }, 30_000);
  assert.equal(expired, [{ userId: user, balance: 1, lowAt: 0.5, grantId: "promo", amount: 0.5 }]);
  assert.ok(Date.now() >= Date.parse(expiresAt));
  assert.is(m.state(user)!.credits!.balance, 1);
  // The view read again agrees.
  await m.refresh(user);
  assert.equal(m.state(user)!.credits, { balance: 1, pending: 0, low_at: 0.5 });
  assert.equal(expired.length, 1, "once");
});

t("1,000 concurrent calls across 4 replica processes with leases on a $5 balance: overdraft $0.00, the ledger's usage equal to the usage", async (ctx) => {
  // Each call reserves $0.008 (1000 tokens in + 1000 buffer) and costs $0.006 (1000 in + 500 out): $6 of calls on $5.
  const user = await createUser(ctx.api, { max_spend_per_period: 0, credits_enabled: true, cost_rates: { m: { input: 0.004, output: 0.004 } }, pre_call_estimate: true, pre_call_buffer_tokens: 1000 });
  await grant(ctx.api, user, `g-${randomUUID()}`, 5);
  const r = await runReplicas(ctx.api, { baseUrl: ctx.stack.apiUrl, apiKey: ctx.apiKey, userId: user, replicas: 4, concurrency: 250, callsPerWorker: 1, leases: true, together: true, callCost: 0.006 });
  assert.ok(r.calls > 0, `calls ran on the balance (${r.calls})`);
  assert.ok(r.refused > 0, "the balance ran out before every call ran");
  assert.ok(r.calls <= 1000);
  const spent = r.calls * 0.006;
  assert.ok(near(r.spend, spent), `settled $${r.spend} for ${r.calls} calls`);
  assert.ok(spent <= 5 + 1e-9, `$${spent} spent of a $5 balance`);
  const c = await eventually(async () => {
    const got = await credits(ctx.api, user);
    return near(got.balance, 5 - spent) ? got : undefined;
  }, 30_000);
  assert.is(c.overdraft, 0);
  const entries = await ledger(ctx.api, user);
  const drawn = entries.filter((e) => e.type === "usage").reduce((s, e) => s - Math.round(e.amount * 1e9), 0) / 1e9;
  assert.ok(near(drawn, spent), `the ledger's usage $${drawn}, the usage $${spent}`);
  assert.ok(!entries.some((e) => e.type === "overdraft"), "no overdraft entry");
  console.log(`    4 replicas, 1,000 calls on $5 with leases: ${r.calls} ran ($${spent.toFixed(3)}), ${r.refused} refusals, ${r.leaseRequests} lease requests; balance $${c.balance}, overdraft $${c.overdraft}, ${entries.length} ledger entries`);
});

t.run();
