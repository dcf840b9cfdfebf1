// Team budgets through the real stack: a member's call is checked against the team plan's
// dimensions with the member's own, the process counts it for the team at once (so another
// member it serves is blocked next), and a fresh process finds the team's figures in the
// member's session view. The Express 429 and the gate event name the team's reason.
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import express from "express";
import * as assert from "uvu/assert";
import { LimitExceededError, Meter } from "../src/index.ts";
import { meterErrorHandler } from "../src/http/express.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { createTeam, createUser, gateEvents, rejects, stackMeter, stackSuite, type StackCtx } from "./support/fixtures.ts";

const t = stackSuite("sdk: team budgets against the real stack", "sdk teams");

const meter = (ctx: StackCtx): Meter => stackMeter(ctx, { flushIntervalMs: 600_000 });

/** Once `m` has delivered its calls, a fresh client (`other`) whose guard() of `userId` is refused from the session view: its error. */
async function blockedInFreshProcess(ctx: StackCtx, m: Meter, userId: string, what: string): Promise<{ other: Meter; blocked: LimitExceededError }> {
  assert.ok(await m.flush({ timeoutMs: 20_000 }));
  const other = meter(ctx);
  const blocked = await eventually(async () => {
    await other.refresh(userId);
    return other.guard(userId).then(() => null, (e: Error) => e);
  }, 20_000, what);
  assert.instance(blocked, LimitExceededError);
  return { other, blocked: blocked as LimitExceededError };
}

// $1 per 1K input tokens: a call of N input tokens costs N/1000 dollars.
const RATES = { m: { input: 1, output: 0 } };

/** One call of `tokens` input tokens of model m for `userId`. */
const spend = (m: Meter, userId: string, tokens: number) => m.call(userId, { model: "m", usage: () => ({ input_tokens: tokens }) }, () => ({ ok: true }));

t("a $1 team cap with 3 members: the first two spend it, the third member's call is blocked naming team:total_spend (here, over HTTP and in a fresh process)", async (ctx) => {
  const [a, b, c] = await Promise.all([createUser(ctx.api), createUser(ctx.api), createUser(ctx.api)]);
  const teamId = await createTeam(ctx.api, { max_spend_per_period: 1, cost_rates: RATES }, [a!, b!, c!]);
  const m = meter(ctx);
  // Members without a plan of their own: priced at the team plan's rates.
  const first = await m.record(a!, { model: "m", input_tokens: 500 });
  assert.is(first.cost_total, 0.5);
  await spend(m, b!, 500);
  const err = (await rejects(() => spend(m, c!, 10), LimitExceededError)) as LimitExceededError;
  assert.is(err.reason, "team:total_spend");
  assert.is(err.resetsAt?.getTime(), Date.parse(m.state(c!)!.team!.billing_period.end));
  assert.is(err.message, "Team spend limit reached: $1.0000 of $1.00 spent (100%)");
  // c's first view came after the other two spent: this process counted both for the team.
  assert.is(m.state(c!)!.team!.period_cost, 1);
  assert.is(m.state(c!)!.team!.team_id, teamId);

  // The product's server answers 429 naming the team's cap, with Retry-After until the team's period ends.
  const app = express();
  app.post("/chat", async (_req, res) => res.json(await spend(m, c!, 10)));
  app.use(meterErrorHandler());
  const server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/chat`, { method: "POST" });
    assert.is(res.status, 429);
    const body = (await res.json()) as Record<string, unknown>;
    assert.equal([body.gate_reason, body.current_value, body.limit_value], ["team:total_spend", 1, 1]);
    assert.ok(Number(res.headers.get("retry-after")) > 0);
  } finally {
    server.close();
  }

  // Another process: the team's spend comes from c's session view.
  const { blocked } = await blockedInFreshProcess(ctx, m, c!, "the team's spend in a fresh process");
  assert.is(blocked.reason, "team:total_spend");
  // The gate event names the team's reason with its figures.
  const events = await eventually(async () => {
    await m.flush({ timeoutMs: 5_000 });
    const r = await gateEvents(ctx.api, c!);
    return r.some((g) => g.blocked) ? r : null;
  }, 20_000, "the blocked call's gate event");
  const hard = events.find((g) => g.blocked)!;
  assert.equal([hard.gate_reason, hard.limit_value], ["team:total_spend", 1]);
});

t("a $0.40 member cap blocks one member while the others go on (here and in a fresh process)", async (ctx) => {
  const [a, b, c] = await Promise.all([createUser(ctx.api), createUser(ctx.api), createUser(ctx.api)]);
  await createTeam(ctx.api, { max_spend_per_period: 100, cost_rates: RATES, limits: [{ name: "seat", metric: "spend", max: 0.4, window: "period", scope: "member" }] }, [a!, b!, c!]);
  const m = meter(ctx);
  await spend(m, a!, 400);
  const err = (await rejects(() => spend(m, a!, 10), LimitExceededError)) as LimitExceededError;
  assert.is(err.reason, "team:limit:seat");
  assert.is(err.message, 'Member limit "seat" of the team reached: $0.4000 of $0.40 spent this period (100%)');
  await spend(m, b!, 300);
  await spend(m, c!, 300);
  assert.is(m.state(b!)!.team!.period_cost, 1);

  const { other, blocked } = await blockedInFreshProcess(ctx, m, a!, "a's share in a fresh process");
  assert.is(blocked.reason, "team:limit:seat");
  assert.is((await other.guard(b!)).status, "ok");
});

t("a member's own plan cap still applies inside a team with room", async (ctx) => {
  const a = await createUser(ctx.api, { max_spend_per_period: 0.2, cost_rates: RATES });
  await createTeam(ctx.api, { max_spend_per_period: 10, cost_rates: RATES }, [a]);
  const m = meter(ctx);
  await spend(m, a, 200);
  const err = (await rejects(() => spend(m, a, 10), LimitExceededError)) as LimitExceededError;
  assert.is(err.reason, "total_spend");
  assert.is(m.state(a)!.team!.period_cost, 0.2);
});

t.run();
