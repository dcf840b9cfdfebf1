// Team budgets counted (BUDGETS.md §4): members' usage over the REST API, through the gateway,
// ingestion and the plans service, read back as the team's sums, the session view's team block
// and its team: dimensions, and a team's own usage and limits.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Api } from "./support/http.ts";
import { joinTeam, sendAllNew, usageJson as event } from "./support/rest.ts";
import { withStack, type TestStack } from "./support/stack.ts";

const t = suite<{ stack: TestStack }>("team usage and dimensions");

withStack(t);

const DAY = 86_400_000;
const uid = (base: string) => `${base}-${randomUUID().slice(0, 8)}`;
const enc = encodeURIComponent;
const near = (a: number, b: number, msg?: string) => assert.ok(Math.abs(a - b) < 1e-9, `${msg ?? ""} ${a} != ${b}`);
// A period that began yesterday: the team's, not a calendar month.
const PERIOD = { period_start: new Date(Date.now() - DAY).toISOString(), period_end: new Date(Date.now() + 20 * DAY).toISOString() };

async function plan(api: Api, fields: Record<string, unknown>): Promise<{ id: string; name: string }> {
  const res = await api.post("/config/plans", { plans: [{ name: uid("plan"), ...fields }] });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.plans[0];
}

async function team(api: Api, planId: string, members: string[]): Promise<string> {
  const teamId = uid("acme|team");
  assert.is((await api.post("/teams", { external_team_id: teamId, name: "Acme" })).status, 201);
  const sub = await api.post(`/teams/${enc(teamId)}/subscription`, { plan_id: planId, ...PERIOD });
  assert.is(sub.status, 200, JSON.stringify(sub.body));
  for (const m of members) await joinTeam(api, m, teamId);
  return teamId;
}

type Dim = { reason: string; scope: string; used: number; max: number; window: string; resets_at: string | null };
const byReason = (limits: Dim[]) => Object.fromEntries(limits.map((d) => [d.reason, d]));

t("a $1 team cap with 3 members: their usage sums in the team's dimensions, usage and limits; a member-scope limit counts each member apart", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const teamPlan = await plan(api, {
    max_spend_per_period: 1,
    model_limits: { "gpt-4o": { max_tokens_per_period: 1000 } },
    limits: [
      { name: "seat", metric: "spend", max: 0.4, window: "period", scope: "member" },
      { name: "daily", metric: "requests", max: 100, window: "day" },
      { name: "burst", metric: "tokens", max: 10_000, window: "rolling", duration_minutes: 60, scope: "member" },
    ],
  });
  const [ann, bob, cy] = [uid("ann"), uid("bob|x"), uid("team:cy")];
  const teamId = await team(api, teamPlan.id, [ann!, bob!, cy!]);
  await sendAllNew(api, [event(ann!, 0.3), event(ann!, 0.1), event(bob!, 0.35), event(cy!, 0.05)]);

  const s = (await api.get(`/users/${enc(cy!)}/session`)).body;
  // cy has no plan of its own: the team's dimensions gate it, its own caps are absent.
  assert.equal([s.plan, s.plan_id, s.sdk_enabled], ["none", null, true]);
  assert.equal([s.team.team_id, s.team.plan, s.team.plan_id, s.team.plan_config.max_spend_per_period], [teamId, teamPlan.name, teamPlan.id, 1]);
  assert.equal(s.team.plan_config.limits.map((l: { name: string; scope: string }) => [l.name, l.scope]), [["seat", "member"], ["daily", "team"], ["burst", "member"]]);
  near(s.team.current_usage.period_cost, 0.8, "the team's sum");
  assert.equal([s.team.current_usage.period_tokens_total, s.team.current_usage.period_tokens_by_model], [60, { "gpt-4o": 60 }]);
  assert.equal(s.team.billing_period, { start: new Date(PERIOD.period_start).toISOString(), end: new Date(PERIOD.period_end).toISOString() });
  near(s.current_usage.period_cost, 0.05, "cy's own");
  const dims = byReason(s.limits);
  assert.equal(Object.keys(dims), ["team:total_spend", "team:model_limit:gpt-4o", "team:limit:seat", "team:limit:daily", "team:limit:burst"]);
  assert.equal([dims["team:total_spend"]!.scope, dims["team:total_spend"]!.max, dims["team:total_spend"]!.resets_at], ["team", 1, s.team.billing_period.end]);
  near(dims["team:total_spend"]!.used, 0.8);
  assert.equal([dims["team:model_limit:gpt-4o"]!.used, dims["team:limit:daily"]!.used, dims["team:limit:daily"]!.scope], [60, 4, "team"]);
  assert.equal([dims["team:limit:seat"]!.scope, dims["team:limit:burst"]!.scope, dims["team:limit:burst"]!.used], ["member", "member", 15]);
  near(dims["team:limit:seat"]!.used, 0.05, "cy's own share of the member limit");

  const annDims = byReason((await api.get(`/users/${enc(ann!)}/limits`)).body.limits);
  near(annDims["team:limit:seat"]!.used, 0.4, "ann's own");
  near(annDims["team:total_spend"]!.used, 0.8);
  assert.is(annDims["team:limit:burst"]!.used, 30);

  const usage = await api.get(`/teams/${enc(teamId)}/usage`);
  assert.is(usage.status, 200, JSON.stringify(usage.body));
  near(usage.body.total_cost, 0.8);
  assert.equal([usage.body.team_id, usage.body.period, usage.body.total_tokens, usage.body.tokens_by_model, usage.body.tool_calls_count], [teamId, "current_period", 60, { "gpt-4o": 60 }, 0]);
  near((await api.get(`/teams/${enc(teamId)}/usage?period=current_month`)).body.total_cost, 0.8, "every event is of this month");
  const limits = await api.get(`/teams/${enc(teamId)}/limits`);
  assert.is(limits.status, 200, JSON.stringify(limits.body));
  assert.equal(limits.body.limits.map((d: Dim) => d.reason), ["team:total_spend", "team:model_limit:gpt-4o", "team:limit:daily"], "team-scope only");
  near(limits.body.limits[0].used, 0.8);
  assert.is((await api.get("/teams/no-such-team/usage")).status, 404);
  assert.is((await api.get("/teams/no-such-team/limits")).status, 404);
  assert.is((await api.get(`/teams/${enc(teamId)}/usage?period=last_week`)).status, 400);
});

t("a member with a plan of its own sees its own dimensions, then its team's", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const own = await plan(api, { max_spend_per_period: 5, max_spend_per_session: 2 });
  const teamPlan = await plan(api, { max_spend_per_period: 1, max_spend_per_session: 0.5 });
  const dana = uid("dana");
  await api.post("/users", { external_user_id: dana });
  assert.is((await api.post(`/users/${enc(dana)}/subscription`, { plan_id: own.id, ...PERIOD })).status, 200);
  await team(api, teamPlan.id, [dana]);
  await sendAllNew(api, [event(dana, 0.25)]);
  const s = (await api.get(`/users/${enc(dana)}/session`)).body;
  assert.equal([s.plan, s.sdk_enabled], [own.name, true]);
  // The team plan's session cap is not a dimension: sessions belong to users.
  assert.equal(s.limits.map((d: Dim) => [d.reason, d.scope]), [["total_spend", "user"], ["session_spend", "user"], ["team:total_spend", "team"]]);
  near(s.limits[0].used, 0.25);
  near(s.limits[2].used, 0.25);
});

t("a member moved to another team leaves its past usage in the old one; a late event counts in the team of its timestamp", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const teamPlan = await plan(api, { max_spend_per_period: 10, limits: [{ name: "seat", metric: "spend", max: 1, window: "period", scope: "member" }] });
  const eve = uid("eve");
  const [a, b] = [await team(api, teamPlan.id, []), await team(api, teamPlan.id, [])];
  await joinTeam(api, eve, a);
  const inA = Date.now() + 1;
  await sendAllNew(api, [event(eve, 0.5)]);
  const beforeMove = Date.now() - 1;
  await joinTeam(api, eve, b);
  // Sent after the move, stamped while eve was in the old team.
  await sendAllNew(api, [event(eve, 0.2), event(eve, 0.125, { timestamp: new Date((inA + beforeMove) / 2).toISOString() })]);

  near((await api.get(`/teams/${enc(a)}/usage`)).body.total_cost, 0.625, "the old team keeps what was spent while a member, the late event included");
  near((await api.get(`/teams/${enc(b)}/usage`)).body.total_cost, 0.2, "the new team counts from the move");
  const s = (await api.get(`/users/${enc(eve)}/session`)).body;
  assert.is(s.team.team_id, b);
  near(s.team.current_usage.period_cost, 0.2);
  const dims = byReason(s.limits);
  near(dims["team:limit:seat"]!.used, 0.2, "the member limit of the new team starts afresh");
  near(s.current_usage.period_cost, 0.825, "the member's own usage is all of it");

  // Left: no team, the view as for anyone without one.
  await joinTeam(api, eve, null);
  const left = (await api.get(`/users/${enc(eve)}/session`)).body;
  assert.equal([left.team, left.sdk_enabled, left.limits], [null, false, []]);
});

t("a user in no team, or in a team without a plan, reads as before: team null, no team: dimension", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const own = await plan(api, { max_spend_per_period: 5 });
  const [solo, member] = [uid("solo"), uid("member")];
  for (const u of [solo, member]) {
    await api.post("/users", { external_user_id: u });
    await api.post(`/users/${enc(u)}/subscription`, { plan_id: own.id, ...PERIOD });
  }
  const bare = uid("bare");
  assert.is((await api.post("/teams", { external_team_id: bare, name: "No plan" })).status, 201);
  await joinTeam(api, member, bare);
  await sendAllNew(api, [event(solo, 1), event(member, 1)]);
  for (const u of [solo, member]) {
    const s = (await api.get(`/users/${enc(u)}/session`)).body;
    assert.is(s.team, null, u);
    assert.equal(s.limits.map((d: Dim) => d.reason), ["total_spend"], u);
    near(s.current_usage.period_cost, 1);
    assert.equal((await api.get(`/users/${enc(u)}/limits`)).body.limits.map((d: Dim) => d.reason), ["total_spend"]);
  }
  const usage = (await api.get(`/teams/${enc(bare)}/usage`)).body;
  assert.equal([usage.total_cost, usage.total_tokens], [0, 0], "usage while the team had no plan counts for no team");
  assert.equal((await api.get(`/teams/${enc(bare)}/limits`)).body.limits, []);
});

t("the OpenAPI document describes the team block, the team routes of usage and limits", async ({ stack }) => {
  const doc = (await stack.api.get("/openapi.json")).body;
  for (const p of ["/api/v1/teams/{team_id}/usage", "/api/v1/teams/{team_id}/limits"]) assert.ok(doc.paths[p]?.get, p);
  assert.ok(JSON.stringify(doc.paths["/api/v1/users/{user_id}/session"]).includes("service_team_id"));
});

t.run();
