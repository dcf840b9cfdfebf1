// Team credits (BUDGETS.md §3, §4): a team's shared pool over the REST API, drawn after each
// member's own credits, exactly once, with its own grants, ledger and routes.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Api } from "./support/http.ts";
import { eventually } from "./support/eventually.ts";
import { creditsOf, ledgerOf, teamOnPlan, usageJson, sendEvents } from "./support/rest.ts";
import { withStack, type TestStack } from "./support/stack.ts";

const t = suite<{ stack: TestStack; api: Api }>("team credits");

withStack(t);
t.before(async (ctx) => {
  ({ api: ctx.api } = await ctx.stack.newProduct("Team credits"));
});

const DAY = 86_400_000;
const uid = (base: string) => `${base}-${randomUUID().slice(0, 8)}`;
const enc = encodeURIComponent;
const near = (a: number, b: number, msg: string) => assert.ok(Math.abs(a - b) < 1e-9, `${msg}: ${a} != ${b}`);
const PERIOD = { period_start: new Date(Date.now() - DAY).toISOString(), period_end: new Date(Date.now() + 20 * DAY).toISOString() };
const PREPAID = { max_spend_per_period: 0, credits_enabled: true };

async function plan(api: Api, fields: Record<string, unknown>): Promise<string> {
  const res = await api.post("/config/plans", { plans: [{ name: uid("plan"), ...fields }] });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.plans[0].id;
}

async function user(api: Api, planFields?: Record<string, unknown>): Promise<string> {
  const id = uid("member|x");
  assert.is((await api.post("/users", { external_user_id: id })).status, 201);
  if (planFields) assert.is((await api.post(`/users/${enc(id)}/subscription`, { plan_id: await plan(api, planFields), ...PERIOD })).status, 200);
  return id;
}

/** A team on `planFields` with `members`; its id has characters a user's key would need escaped. */
const team = (api: Api, planFields: Record<string, unknown>, members: string[], teamId = uid("acme|team:x")) => teamOnPlan(api, planFields, PERIOD, members, teamId);

const credits = creditsOf;
const ledger = (api: Api, path: string) => ledgerOf(api, path, 3);

const usage = (entries: any[]) => entries.filter((e) => e.type === "usage" || e.type === "overdraft").reduce((s, e) => s + e.amount, 0);
const teamTotal = (view: { limits: { reason: string }[] }) => view.limits.find((d) => d.reason === "team:total_spend") as any;

async function balanceIs(api: Api, path: string, want: number) {
  return eventually(async () => {
    const c = await credits(api, path);
    return Math.abs(c.balance - want) < 1e-9 && c;
  }, 30_000, `${path} balance ${want}`);
}

t("a member with no credits of its own draws the team's pool; the pool spent blocks the team's total_spend naming credits; a team top-up lifts it", async ({ api }) => {
  const ann = await user(api);
  const teamId = await team(api, { ...PREPAID, credits_low_at: 0.25 }, [ann]);
  const tp = `/teams/${enc(teamId)}`;
  const grant = await api.post(`${tp}/credits`, { id: "pay_1", amount: 1 });
  assert.is(grant.status, 201, JSON.stringify(grant.body));
  let session = (await api.get(`/users/${enc(ann)}/session`)).body;
  assert.is(session.sdk_enabled, true);
  near(session.team.credits.balance, 1, "the pool in the session's team block");
  near(teamTotal(session).max, 1, "team cap = allowance 0 + pool 1");
  assert.equal(teamTotal(session).credits, { balance: 1, low_at: 0.25 });

  await sendEvents(api, [usageJson(ann, 0.6), usageJson(ann, 0.4)]);
  const spent = await balanceIs(api, tp, 0);
  assert.is(spent.team_id, teamId);
  assert.is(spent.grants[0].status, "depleted");
  near(spent.overdraft, 0, "no overdraft");
  session = (await api.get(`/users/${enc(ann)}/session`)).body;
  near(teamTotal(session).used, 1, "team used");
  near(teamTotal(session).max, 1, "team cap: drawn 1 + pool 0");
  assert.ok(teamTotal(session).used >= teamTotal(session).max, "blocked: the team's cap is reached");
  assert.equal(teamTotal(session).credits, { balance: 0, low_at: 0.25 }, "the block names the credits");
  const teamLimits = (await api.get(`${tp}/limits`)).body;
  near(teamTotal(teamLimits).max, 1, "GET /teams/{id}/limits shows the same cap");

  assert.is((await api.post(`${tp}/credits`, { id: "pay_2", amount: 2 })).status, 201);
  session = (await api.get(`/users/${enc(ann)}/session`)).body;
  near(teamTotal(session).max, 3, "a team top-up raises the team's cap");
  assert.ok(teamTotal(session).used < teamTotal(session).max, "the member runs again");
  await sendEvents(api, [usageJson(ann, 0.5)]);
  await balanceIs(api, tp, 1.5);

  near(usage(await ledger(api, tp)), -1.5, "the pool's ledger holds the members' usage");
  const own = await credits(api, `/users/${enc(ann)}`);
  assert.equal([own.balance, own.grants.length], [0, 0], "the member's own credits are untouched");
  assert.equal(await ledger(api, `/users/${enc(ann)}`), [], "and its own ledger empty");
});

t("a member with credits of its own draws them first, then the team's pool; the ledgers say which paid what", async ({ api }) => {
  const bob = await user(api, PREPAID);
  const teamId = await team(api, PREPAID, [bob]);
  const tp = `/teams/${enc(teamId)}`;
  const bp = `/users/${enc(bob)}`;
  assert.is((await api.post(`${bp}/credits`, { id: "own", amount: 0.5 })).status, 201);
  assert.is((await api.post(`${tp}/credits`, { id: "pool", amount: 1 })).status, 201);
  await sendEvents(api, [usageJson(bob, 0.3)]);
  await balanceIs(api, bp, 0.2);
  near((await credits(api, tp)).balance, 1, "the pool untouched while the member's own credits pay");
  await sendEvents(api, [usageJson(bob, 0.5)]);
  await balanceIs(api, tp, 0.7);
  const mine = await credits(api, bp);
  near(mine.balance, 0, "own credits spent first");
  near(mine.overdraft, 0, "the member owes nothing: the pool paid the rest");
  near(usage(await ledger(api, bp)), -0.5, "the member's ledger: its own 0.50");
  near(usage(await ledger(api, tp)), -0.3, "the pool's ledger: the 0.30 beyond");
  // Both caps allow the member what its own credits and the pool held: 0.50 + 1.00.
  const session = (await api.get(`${bp}/session`)).body;
  const own = session.limits.find((d: { reason: string }) => d.reason === "total_spend");
  near(own.max, 1.5, "the member's own cap goes on with the pool");
  near(own.used, 0.8, "the member's own spend");
  near(teamTotal(session).max, 1.5, "the team's cap: the pool and what the member's own credits paid");
  near(teamTotal(session).used, 0.8, "the team's spend");
});

t("team grants: a re-sent id changes nothing, other fields 409, void, 404 for an unknown team; a user and a team of the same id never share credits", async ({ api }) => {
  const same = uid("same");
  assert.is((await api.post("/users", { external_user_id: same })).status, 201);
  const teamId = await team(api, PREPAID, [], same);
  const tp = `/teams/${enc(teamId)}`;
  const first = await api.post(`${tp}/credits`, { id: "pay", amount: 2, kind: "promotional", priority: 10 });
  assert.is(first.status, 201, JSON.stringify(first.body));
  const again = await api.post(`${tp}/credits`, { id: "pay", amount: 2, kind: "promotional", priority: 10 });
  assert.is(again.status, 200);
  assert.equal(again.body, first.body);
  assert.is((await api.post(`${tp}/credits`, { id: "pay", amount: 3 })).status, 409);
  const c = await credits(api, tp);
  near(c.balance, 2, "one grant counted");
  assert.is(c.grants.length, 1);
  assert.equal((await ledger(api, tp)).map((e) => [e.type, e.amount]), [["grant", 2]]);
  const mine = await credits(api, `/users/${enc(same)}`);
  assert.equal([mine.user_id, mine.balance, mine.grants.length], [same, 0, 0], "the user of the same id has none of it");

  const voided = await api.post(`${tp}/credits/pay/void`);
  assert.is(voided.status, 200, JSON.stringify(voided.body));
  assert.is(voided.body.status, "voided");
  near((await credits(api, tp)).balance, 0, "voided");

  const unknown = `/teams/${enc(uid("nobody"))}`;
  for (const res of [
    await api.get(`${unknown}/credits`),
    await api.post(`${unknown}/credits`, { id: "x", amount: 1 }),
    await api.post(`${unknown}/credits/x/void`),
    await api.get(`${unknown}/credits/ledger`),
  ]) {
    assert.is(res.status, 404, JSON.stringify(res.body));
    assert.match(JSON.stringify(res.body), /team/);
  }
});

t("usage a member spent before joining is not the team's to pay; a member leaving draws the pool no more", async ({ api }) => {
  const fay = await user(api);
  await sendEvents(api, [usageJson(fay, 0.7)]);
  const teamId = await team(api, PREPAID, [fay]);
  const tp = `/teams/${enc(teamId)}`;
  assert.is((await api.post(`${tp}/credits`, { id: "pay", amount: 1 })).status, 201);
  await sendEvents(api, [usageJson(fay, 0.2)]);
  await balanceIs(api, tp, 0.8);
  assert.is((await api.request("PUT", `/users/${enc(fay)}/team`, { body: { team_id: null } })).status, 200);
  await sendEvents(api, [usageJson(fay, 0.3)]);
  // A later member's usage shows the first left nothing behind: 0.8 - 0.1 only.
  const gil = await user(api);
  assert.is((await api.request("PUT", `/users/${enc(gil)}/team`, { body: { team_id: teamId } })).status, 200);
  await sendEvents(api, [usageJson(gil, 0.1)]);
  await balanceIs(api, tp, 0.7);
  near(usage(await ledger(api, tp)), -0.3, "the pool paid 0.20 and 0.10");
});

t("a member's spend the pool paid whole is not handed to the pool again when a plan of its own, recorded later, moves it", async ({ api }) => {
  const cy = await user(api);
  const teamId = await team(api, PREPAID, [cy]);
  const tp = `/teams/${enc(teamId)}`;
  const cp = `/users/${enc(cy)}`;
  assert.is((await api.post(`${tp}/credits`, { id: "pool", amount: 100 })).status, 201);
  await sendEvents(api, [usageJson(cy, 4)]);
  await balanceIs(api, tp, 96);
  // Its own prepaid plan, dated as the team's: the $4 moves from its calendar month to that period.
  assert.is((await api.post(`${cp}/subscription`, { plan_id: await plan(api, PREPAID), ...PERIOD })).status, 200);
  assert.is((await api.post(`${cp}/credits`, { id: "own", amount: 2 })).status, 201);
  const own = (await api.get(`${cp}/session`)).body.limits.find((d: { reason: string }) => d.reason === "total_spend");
  near(own.used, 4, "moved");
  near(own.max - own.used, 98, "its own $2 and the pool's $96");
  await sendEvents(api, [usageJson(cy, 3)]);
  await balanceIs(api, cp, 0);
  await balanceIs(api, tp, 95);
  near(usage(await ledger(api, tp)), -5, "the pool paid the $4 and the $1 its own credits left");
});

t("a member's spend a late team plan put in the pool is not handed to the pool again when a plan of its own, recorded later, moves it", async ({ api }) => {
  const di = await user(api);
  const teamId = await team(api, { max_spend_per_period: 100 }, [di]);
  const tp = `/teams/${enc(teamId)}`;
  const dp = `/users/${enc(di)}`;
  const hour = 3_600_000;
  const since = (hours: number) => ({ period_start: new Date(Date.now() - hours * hour).toISOString(), period_end: new Date(Date.now() + 30 * DAY).toISOString() });
  await sendEvents(api, [usageJson(di, 4)]);
  // Told only now: the team has been on a prepaid plan since two hours ago; the $4 is the pool's to pay.
  assert.is((await api.post(`${tp}/subscription`, { plan_id: await plan(api, PREPAID), ...since(2) })).status, 200);
  assert.is((await api.post(`${tp}/credits`, { id: "pool", amount: 100 })).status, 201);
  // Then: the member has had a prepaid plan of its own since three hours ago, and $2 of its own.
  assert.is((await api.post(`${dp}/subscription`, { plan_id: await plan(api, PREPAID), ...since(3) })).status, 200);
  assert.is((await api.post(`${dp}/credits`, { id: "own", amount: 2 })).status, 201);
  const session = (await api.get(`${dp}/session`)).body;
  near(session.current_usage.period_cost, 4, "moved to its own period");
  near(teamTotal(session).used, 4, "and to the team's new period");
  await sendEvents(api, [usageJson(di, 3)]);
  await balanceIs(api, dp, 0);
  await balanceIs(api, tp, 95);
  near(usage(await ledger(api, tp)), -5, "the pool paid the $4 and the $1 its own credits left");
});

t.run();
