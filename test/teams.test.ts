// Teams over the REST API (BUDGETS.md §4): the gateway and the plans service together, as a
// product integrating team budgets calls them. Counting a team's usage is ingestion's part.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { randomUUID } from "node:crypto";
import type { Api } from "./support/http.ts";
import { withStack, type TestStack } from "./support/stack.ts";

const t = suite<{ stack: TestStack; a: Api; b: Api }>("teams over HTTP");

withStack(t);
t.before(async (ctx) => {
  ctx.a = (await ctx.stack.newProduct("Teams A")).api;
  ctx.b = (await ctx.stack.newProduct("Teams B")).api;
});

const TEAM_KEYS = ["billing_subscription_id", "created_at", "member_count", "name", "plan_name", "service_team_id", "team_id", "updated_at"];
const JAN = { period_start: "2026-01-01T00:00:00.000Z", period_end: "2026-02-01T00:00:00.000Z" };
const uid = (base: string) => `${base}-${randomUUID().slice(0, 8)}`;
const put = (api: Api, path: string, body: unknown) => api.request("PUT", path, { body });
const enc = encodeURIComponent;

t("a team plan of $500 a month with $50 a month per member: create, subscribe, add members, list", async ({ a, b }) => {
  const plan = await a.post("/config/plans", {
    plans: [{ name: uid("team-500"), max_spend_per_period: 500, limits: [{ name: "seat", metric: "spend", max: 50, window: "period", scope: "member" }] }],
  });
  assert.is(plan.status, 201, JSON.stringify(plan.body));
  const teamPlan = plan.body.plans[0];
  assert.equal(teamPlan.limits[0].scope, "member");

  const teamId = uid("acme/é");
  const created = await a.post("/teams", { external_team_id: teamId, name: "Acme" });
  assert.is(created.status, 201, JSON.stringify(created.body));
  assert.equal(Object.keys(created.body).sort(), TEAM_KEYS);
  assert.equal([created.body.team_id, created.body.name, created.body.plan_name, created.body.member_count], [teamId, "Acme", null, 0]);
  assert.is((await a.post("/teams", { external_team_id: teamId, name: "again" })).status, 409);
  assert.is((await b.get(`/teams/${enc(teamId)}`)).status, 404, "another product's team reads as not found");

  const noDates = await a.post(`/teams/${enc(teamId)}/subscription`, { plan_id: teamPlan.id });
  assert.is(noDates.status, 400, "a finite cap needs the period, as for a user");
  const subscribed = await a.post(`/teams/${enc(teamId)}/subscription`, { plan_id: teamPlan.id, billing_subscription_id: "sub_acme", ...JAN });
  assert.is(subscribed.status, 200, JSON.stringify(subscribed.body));
  assert.equal([subscribed.body.plan_name, subscribed.body.billing_subscription_id], [teamPlan.name, "sub_acme"]);

  const members = ["ann", "bob", "cy"].map((m) => uid(m));
  for (const m of members) {
    assert.is((await a.post("/users", { external_user_id: m })).status, 201);
    const joined = await put(a, `/users/${enc(m)}/team`, { team_id: teamId });
    assert.is(joined.status, 200, JSON.stringify(joined.body));
    assert.is(joined.body.team_id, teamId);
  }
  assert.is((await a.get(`/users/${enc(members[0]!)}`)).body.team_id, teamId);
  assert.is((await a.get(`/teams/${enc(teamId)}`)).body.member_count, 3);

  const page1 = await a.get(`/teams/${enc(teamId)}/members?limit=2`);
  assert.is(page1.status, 200, JSON.stringify(page1.body));
  assert.is(page1.body.team_id, teamId);
  assert.is(page1.body.members.length, 2);
  const page2 = await a.get(`/teams/${enc(teamId)}/members?limit=2&cursor=${enc(page1.body.next_cursor)}`);
  assert.is(page2.body.next_cursor, null);
  assert.equal([...page1.body.members, ...page2.body.members].map((u: { external_user_id: string }) => u.external_user_id), [...members].sort());

  const left = await put(a, `/users/${enc(members[2]!)}/team`, { team_id: null });
  assert.equal([left.status, left.body.team_id], [200, null]);
  assert.is((await a.get(`/teams/${enc(teamId)}`)).body.member_count, 2);
  assert.is((await a.get(`/teams/${enc(teamId)}/members`)).body.members.length, 2);
});

t("GET /teams pages by prefix; bad queries are 400", async ({ a }) => {
  const prefix = uid("org");
  for (const s of ["a", "b", "c"]) assert.is((await a.post("/teams", { external_team_id: `${prefix}-${s}`, name: s })).status, 201);
  const first = await a.get(`/teams?prefix=${enc(prefix)}&limit=2`);
  assert.is(first.status, 200);
  assert.equal(first.body.teams.map((x: { name: string }) => x.name), ["a", "b"]);
  const second = await a.get(`/teams?prefix=${enc(prefix)}&limit=2&cursor=${enc(first.body.next_cursor)}`);
  assert.equal([second.body.teams.map((x: { name: string }) => x.name), second.body.next_cursor], [["c"], null]);
  assert.is((await a.get("/teams?limit=0")).status, 400);
  assert.is((await a.get("/teams?limit=201")).status, 400);
  assert.is((await a.get("/teams?cursor=nonsense")).status, 400);
});

t("refusals: unknown user or team 404, bad bodies 422, a bad scope 400 naming the limit", async ({ a }) => {
  const teamId = uid("t");
  await a.post("/teams", { external_team_id: teamId, name: "T" });
  const user = uid("u");
  await a.post("/users", { external_user_id: user });
  assert.is((await put(a, `/users/${enc(user)}/team`, { team_id: "no-such-team" })).status, 404);
  assert.is((await put(a, `/users/no-such-user/team`, { team_id: teamId })).status, 404);
  assert.is((await put(a, `/users/${enc(user)}/team`, {})).status, 422, "team_id is required (null leaves)");
  assert.is((await put(a, `/users/${enc(user)}/team`, { team_id: teamId, extra: 1 })).status, 422);
  assert.is((await a.get("/teams/no-such-team")).status, 404);
  assert.is((await a.get("/teams/no-such-team/members")).status, 404);
  assert.is((await a.post("/teams/no-such-team/subscription", { plan_id: randomUUID() })).status, 404);
  assert.is((await a.post(`/teams/${enc(teamId)}/subscription`, { plan_id: randomUUID() })).status, 404, "an unknown plan");
  for (const body of [{}, { external_team_id: "" }, { external_team_id: "x".repeat(256), name: "n" }, { external_team_id: uid("t"), name: "" }, { external_team_id: "..", name: "n" }]) {
    assert.is((await a.post("/teams", body)).status, 422, JSON.stringify(body));
  }
  const bad = await a.post("/config/plans", { plans: [{ name: uid("bad"), limits: [{ name: "seat", metric: "spend", max: 1, window: "day", scope: "org" }] }] });
  assert.is(bad.status, 400);
  assert.match(bad.body.detail, /limits\[0\] \("seat"\)\.scope/);
});

t("the change marker names users whose team changed and teams whose subscription was set", async ({ a }) => {
  const [plan] = (await a.post("/config/plans", { plans: [{ name: uid("open") }] })).body.plans;
  const teamId = uid("t");
  const user = uid("u");
  await a.post("/teams", { external_team_id: teamId, name: "T" });
  await a.post("/users", { external_user_id: user });
  const start = (await a.get("/config/changes")).body.marker;
  await put(a, `/users/${enc(user)}/team`, { team_id: teamId });
  await a.post(`/teams/${enc(teamId)}/subscription`, { plan_id: plan.id });
  const changes = await a.get(`/config/changes?since=${start}`);
  assert.equal([changes.body.user_ids, changes.body.team_ids], [[user], [teamId]]);
});

t("the OpenAPI document describes the team routes and fields", async ({ stack }) => {
  const doc = (await stack.api.get("/openapi.json")).body;
  for (const p of ["/api/v1/teams", "/api/v1/teams/{team_id}", "/api/v1/teams/{team_id}/subscription", "/api/v1/teams/{team_id}/members", "/api/v1/users/{user_id}/team"]) {
    assert.ok(doc.paths[p], p);
  }
  assert.ok(JSON.stringify(doc.paths["/api/v1/users/{user_id}"]).includes("team_id"));
});

t.run();
