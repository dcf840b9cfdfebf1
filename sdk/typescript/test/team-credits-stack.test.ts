// A team's shared pool through the real stack (BUDGETS.md §4): the client counts the pool into
// the team's cap, blocks a member once the members' calls spent it, names the credits in the
// block, and lets the member run again once a grant tops the pool up.
import * as assert from "uvu/assert";
import { LimitExceededError, Meter } from "../src/index.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { createTeam, createUser, rejects, stackMeter, stackSuite } from "./support/fixtures.ts";

const t = stackSuite("sdk: a team's credit pool against the real stack", "sdk team credits");

// $1 per 1K input tokens: a call of N input tokens costs N/1000 dollars.
const RATES = { m: { input: 1, output: 0 } };
const spend = (m: Meter, userId: string, tokens: number) => m.call(userId, { model: "m", usage: () => ({ input_tokens: tokens }) }, () => ({ ok: true }));

t("a pure-prepaid team with a $1 pool: two members spend it, the next call is blocked naming the team's credits; a team top-up lets it run", async (ctx) => {
  const [a, b] = await Promise.all([createUser(ctx.api), createUser(ctx.api)]);
  const teamId = await createTeam(ctx.api, { max_spend_per_period: 0, credits_enabled: true, credits_low_at: 0.2, cost_rates: RATES }, [a!, b!]);
  assert.is((await ctx.api.post(`/teams/${teamId}/credits`, { id: "pay_1", amount: 1 })).status, 201);
  const m = stackMeter(ctx, { flushIntervalMs: 600_000 });
  await spend(m, a!, 600);
  await spend(m, b!, 400);
  const err = (await rejects(() => spend(m, a!, 10), LimitExceededError)) as LimitExceededError;
  assert.is(err.reason, "team:total_spend");
  assert.equal(err.credits, { balance: 0, lowAt: 0.2 }, "the block names the team's credits");

  // The service drew the pool once the calls were reported; a top-up lifts the team's cap.
  assert.ok(await m.flush({ timeoutMs: 20_000 }));
  await eventually(async () => {
    const c = (await ctx.api.get(`/teams/${teamId}/credits`)).body;
    return Math.abs(c.balance) < 1e-9;
  }, 30_000, "the pool drawn by the service");
  assert.is((await ctx.api.post(`/teams/${teamId}/credits`, { id: "pay_2", amount: 2 })).status, 201);
  await m.refresh(a!);
  const res = await spend(m, a!, 500);
  assert.equal(res, { ok: true });
  assert.is(m.state(a!)!.team!.period_cost, 1.5);
});

t("reservations hold against the team's pool: 200 concurrent calls of two members on a $1 pool spend at most $1, nothing overdrawn", async (ctx) => {
  const [a, b] = await Promise.all([createUser(ctx.api), createUser(ctx.api)]);
  // Each call reserves $0.008 (1000 tokens in + 1000 buffer) and costs $0.006 (1000 in + 500 out): $1.20 of calls on $1.
  const plan = { max_spend_per_period: 0, credits_enabled: true, cost_rates: { m: { input: 0.004, output: 0.004 } }, pre_call_estimate: true, pre_call_buffer_tokens: 1000 };
  const teamId = await createTeam(ctx.api, plan, [a!, b!]);
  assert.is((await ctx.api.post(`/teams/${teamId}/credits`, { id: "pay_1", amount: 1 })).status, 201);
  const m = stackMeter(ctx, { flushIntervalMs: 600_000 });
  await Promise.all([m.refresh(a!), m.refresh(b!)]);
  let ran = 0;
  let refused = 0;
  await Promise.all(
    Array.from({ length: 200 }, async (_, i) => {
      try {
        const r = await m.reserve(i % 2 === 0 ? a! : b!, { model: "m", input_tokens: 1000 });
        await new Promise((done) => setTimeout(done, 5));
        await r.commit({ input_tokens: 1000, output_tokens: 500 });
        ran++;
      } catch (err) {
        if (!(err instanceof LimitExceededError)) throw err;
        assert.is(err.reason, "team:total_spend");
        refused++;
      }
    }),
  );
  assert.ok(refused > 0 && ran > 0, `${ran} ran, ${refused} refused`);
  assert.ok(ran * 0.006 <= 1 + 1e-9, `$${ran * 0.006} spent of a $1 pool`);
  assert.ok(await m.flush({ timeoutMs: 20_000 }));
  const c = await eventually(async () => {
    const got = (await ctx.api.get(`/teams/${teamId}/credits`)).body;
    return Math.abs(got.balance - (1 - ran * 0.006)) < 1e-9 ? got : undefined;
  }, 30_000, "the pool drawn for the calls that ran");
  assert.is(c.overdraft, 0);
});

t("with leases, a pure-prepaid team's lease grants against its pool: two replicas' members spend the $1 pool and no more", async (ctx) => {
  const [a, b] = await Promise.all([createUser(ctx.api), createUser(ctx.api)]);
  // pre_call_estimate: each call holds its estimate, so the pool holds exactly (without it, each
  // replica's last call may pass the cap by its own cost, as the leases guide says).
  const teamId = await createTeam(ctx.api, { max_spend_per_period: 0, credits_enabled: true, cost_rates: RATES, pre_call_estimate: true, pre_call_buffer_tokens: 0 }, [a!, b!]);
  assert.is((await ctx.api.post(`/teams/${teamId}/credits`, { id: "pay_1", amount: 1 })).status, 201);
  // Two replicas (one holder each), each serving one member: every call runs on the team slice its holder was granted.
  const replicas = [a!, b!].map(() => stackMeter(ctx, { leases: true, flushIntervalMs: 200 }));
  let ran = 0;
  let refused = 0;
  await Promise.all(
    replicas.map(async (m, i) => {
      for (let k = 0; k < 15; k++) {
        try {
          // $0.10 a call (its input known before it runs, so its estimate is its cost): 30 calls would spend $3.
          const user = i === 0 ? a! : b!;
          await m.call(user, { model: "m", input_tokens: 100, usage: () => ({ input_tokens: 100 }) }, () => ({ ok: true }));
          ran++;
        } catch (err) {
          if (!(err instanceof LimitExceededError)) throw err;
          assert.is(err.reason, "team:total_spend");
          refused++;
        }
      }
    }),
  );
  assert.ok(ran >= 1, `the pool's $1 let calls run under leases (${ran} ran, ${refused} refused)`);
  assert.ok(ran <= 10 && refused >= 20, `${ran} ran, ${refused} refused: at most $1 of $0.10 calls`);
  for (const m of replicas) assert.ok(await m.flush({ timeoutMs: 20_000 }));
  const c = await eventually(async () => {
    const got = (await ctx.api.get(`/teams/${teamId}/credits`)).body;
    return Math.abs(got.balance - (1 - ran * 0.1)) < 1e-9 ? got : undefined;
  }, 30_000, "the pool drawn for the calls that ran");
  assert.is(c.overdraft, 0);
});

t.run();
