// Analytics by team (BUDGETS.md §4): every usage route restricted to one team with `team_id`, and
// top teams, over the REST API through the gateway, ingestion, the plans service and analytics.
// Each event counts for the team its user was a member of at the event's time.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { toDollars, toNano } from "@meter/rules";
import type { Api } from "./support/http.ts";
import { joinTeam, sendAllNew, usageJson } from "./support/rest.ts";
import { withStack, type TestStack } from "./support/stack.ts";

const t = suite<{ stack: TestStack }>("analytics by team");

withStack(t, { services: { ingestion: { relayIntervalMs: 50 }, analytics: { rollIntervalMs: 100 } } });

const DAY = 86_400_000;
const uid = (base: string) => `${base}-${randomUUID().slice(0, 8)}`;
const enc = encodeURIComponent;
/** Dollars summed as whole nano-dollars: the very figure analytics must show. */
const sum = (...costs: number[]) => toDollars(costs.reduce((a, c) => a + toNano(c), 0));
const today = () => new Date().toISOString().slice(0, 10);

const event = (userId: string, cost: number, model: string, fields: Record<string, unknown> = {}) => usageJson(userId, cost, { model, ...fields });

const gate = (userId: string, status: "soft_gate" | "hard_gate") => ({
  id: randomUUID(),
  user_id: userId,
  timestamp: new Date().toISOString(),
  status,
  gate_reason: "total_spend",
  usage_pct: 1,
  current_value: 1,
  limit_value: 1,
  blocked: status === "hard_gate",
});

/** Polls GET `path` until `done` holds (analytics is fed asynchronously). */
async function until(api: Api, path: string, done: (body: any) => boolean, ms = 60_000): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const res = await api.get(path);
    assert.is(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
    if (done(res.body) || Date.now() > deadline) return res.body;
    await new Promise((r) => setTimeout(r, 200));
  }
}

t("two teams, a member moved between them and a user in none: each team's figures on every route, top teams in order", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const plan = await api.post("/config/plans", { plans: [{ name: uid("team plan"), max_spend_per_period: 100 }] });
  assert.is(plan.status, 201, JSON.stringify(plan.body));
  // Team a has a plan, team b none: analytics reports both by membership.
  const [a, b] = [uid("acme|a"), uid("beta:b")];
  for (const id of [a, b]) assert.is((await api.post("/teams", { external_team_id: id, name: id })).status, 201);
  const period = { period_start: new Date(Date.now() - DAY).toISOString(), period_end: new Date(Date.now() + 20 * DAY).toISOString() };
  assert.is((await api.post(`/teams/${enc(a)}/subscription`, { plan_id: plan.body.plans[0].id, ...period })).status, 200);
  const [a1, a2, b1, mover, solo] = [uid("a1"), uid("a2"), uid("b1"), uid("mover"), uid("solo")];
  for (const u of [a1, a2, mover]) await joinTeam(api, u, a);
  await joinTeam(api, b1, b);
  assert.is((await api.post("/users", { external_user_id: solo })).status, 201);

  const joinedA = Date.now() + 1;
  await sendAllNew(api, [
    event(a1, 0.1, "gpt-4o"),
    event(a1, 0.2, "claude-3.5-sonnet"),
    event(a2, 0.3, "gpt-4o"),
    event(mover, 0.4, "gpt-4o"),
    event(b1, 0.05, "gpt-4o"),
    event(solo, 1, "gpt-4o"),
  ]);
  const manual = await api.post("/events", { user_id: b1, cost: 0.25, model: "gpt-4o" });
  assert.is(manual.status, 201, JSON.stringify(manual.body));
  assert.is((await api.post("/gate-events/batch", [gate(a1, "hard_gate"), gate(solo, "soft_gate")])).status, 200);
  const beforeMove = Date.now() - 1;
  await joinTeam(api, mover, b);
  // After the move; and one sent now but stamped while the mover was still in a.
  await sendAllNew(api, [event(mover, 0.15, "gpt-4o"), event(mover, 0.125, "gpt-4o", { timestamp: new Date((joinedA + beforeMove) / 2).toISOString() })]);
  assert.is((await api.post("/gate-events/batch", [gate(mover, "soft_gate")])).status, 200);

  const aCost = sum(0.1, 0.2, 0.3, 0.4, 0.125);
  const bCost = sum(0.05, 0.25, 0.15);
  const all = sum(aCost, bCost, 1);
  const summary = await until(api, "/analytics/summary?days=1", (s) => s.total_events === 9);
  assert.equal([summary.total_cost, summary.active_users], [all, 5]);
  // Gates are counted by another path: wait for them too.
  await until(api, "/analytics/gate-timeseries?days=1", (g) => g.data[0].soft_gates + g.data[0].hard_gates === 3);

  const top = (await api.get("/analytics/top-teams?days=1")).body;
  assert.equal(top, {
    teams: [
      { team_id: a, cost: aCost, tokens: 75, events: 5 },
      { team_id: b, cost: bCost, tokens: 30, events: 3 },
    ],
  });
  assert.equal((await api.get("/analytics/top-teams?days=1&limit=1")).body.teams.map((x: { team_id: string }) => x.team_id), [a]);
  assert.equal((await api.get(`/analytics/top-teams?days=1&team_id=${enc(b)}`)).body.teams, [{ team_id: b, cost: bCost, tokens: 30, events: 3 }]);
  assert.equal((await api.get("/analytics/top-teams?days=1&source=manual")).body.teams, [{ team_id: b, cost: 0.25, tokens: 0, events: 1 }]);

  const q = (path: string, team: string, extra = "") => api.get(`/analytics/${path}?days=1&team_id=${enc(team)}${extra}`);
  const sa = (await q("summary", a)).body;
  assert.equal([sa.total_cost, sa.total_tokens, sa.total_events, sa.active_users], [aCost, 75, 5, 3]);
  assert.equal(sa.previous_period, { total_cost: 0, total_tokens: 0, total_events: 0, active_users: 0 });
  const sb = (await q("summary", b)).body;
  assert.equal([sb.total_cost, sb.total_tokens, sb.total_events, sb.active_users], [bCost, 30, 3, 2]);
  assert.equal((await q("summary", b, "&source=manual")).body.total_cost, 0.25);

  assert.equal((await q("timeseries", a)).body.data, [{ date: today(), cost: aCost, tokens: 75, events: 5 }]);
  assert.equal((await q("timeseries", b)).body.data, [{ date: today(), cost: bCost, tokens: 30, events: 3 }]);

  assert.equal((await q("gate-timeseries", a)).body.data, [{ date: today(), soft_gates: 0, hard_gates: 1 }]);
  assert.equal((await q("gate-timeseries", b)).body.data, [{ date: today(), soft_gates: 1, hard_gates: 0 }], "the mover's gate after the move");

  const gpt = sum(0.1, 0.3, 0.4, 0.125);
  assert.equal((await q("breakdown", a)).body.models, [
    { model: "gpt-4o", cost: gpt, tokens: 60, pct: Math.round((gpt / aCost) * 10_000) / 100 },
    { model: "claude-3.5-sonnet", cost: 0.2, tokens: 15, pct: Math.round((0.2 / aCost) * 10_000) / 100 },
  ]);
  assert.equal((await q("breakdown", b)).body.models, [{ model: "gpt-4o", cost: bCost, tokens: 30, pct: 100 }]);

  const users = (body: { users: { user_id: string; cost: number; events: number }[] }) => body.users.map((u) => [u.user_id, u.cost, u.events]);
  const [x, y] = [a1, a2].sort();
  const eventsOf = (u: string) => (u === a1 ? 2 : 1);
  assert.equal(users((await q("top-users", a)).body), [[mover, sum(0.4, 0.125), 2], [x!, 0.3, eventsOf(x!)], [y!, 0.3, eventsOf(y!)]], "the mover's past stays with a");
  assert.equal(users((await q("top-users", b)).body), [[b1, 0.3, 2], [mover, 0.15, 1]]);
  assert.equal(users((await q("top-users", b, "&limit=1")).body), [[b1, 0.3, 2]]);
  // The user in no team is in the product's figures only.
  assert.ok(users((await api.get("/analytics/top-users?days=1")).body).some(([u]) => u === solo));
});

t("an unknown team is 404 on every route; invalid parameters are 400", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const team = uid("known");
  assert.is((await api.post("/teams", { external_team_id: team, name: "Known" })).status, 201);
  const routes = ["summary", "timeseries", "gate-timeseries", "breakdown", "top-users", "top-teams"];
  const other = await stack.newProduct();
  for (const r of routes) {
    const res = await api.get(`/analytics/${r}?team_id=no-such-team`);
    assert.is(res.status, 404, `${r}: ${JSON.stringify(res.body)}`);
    assert.ok(String(res.body.detail).includes("no-such-team"), JSON.stringify(res.body));
    // A team of another product is unknown here.
    assert.is((await other.api.get(`/analytics/${r}?team_id=${enc(team)}`)).status, 404, r);
    const known = await api.get(`/analytics/${r}?team_id=${enc(team)}`);
    assert.is(known.status, 200, `${r}: ${JSON.stringify(known.body)}`);
    for (const bad of ["days=0", "days=366", "team_id=", "days=x"]) assert.is((await api.get(`/analytics/${r}?${bad}`)).status, 400, `${r}?${bad}`);
  }
  for (const bad of ["limit=0", "limit=101", "source=other"]) assert.is((await api.get(`/analytics/top-teams?${bad}`)).status, 400, bad);
  assert.equal((await api.get(`/analytics/top-teams`)).body, { teams: [] });
  const s = (await api.get(`/analytics/summary?team_id=${enc(team)}`)).body;
  assert.equal([s.total_cost, s.total_events, s.active_users], [0, 0, 0], "a team without usage");
});

t("the OpenAPI document describes top teams and the team filter", async ({ stack }) => {
  const doc = (await stack.api.get("/openapi.json")).body;
  const topTeams = doc.paths["/api/v1/analytics/top-teams"]?.get;
  assert.ok(topTeams, "top teams");
  assert.ok(JSON.stringify(topTeams.responses["200"]).includes("team_id"));
  for (const r of ["summary", "timeseries", "gate-timeseries", "breakdown", "top-users", "top-teams"]) {
    const op = doc.paths[`/api/v1/analytics/${r}`].get;
    assert.ok(
      op.parameters.some((p: { name: string }) => p.name === "team_id"),
      r,
    );
    assert.ok(op.responses["404"], r);
  }
});


t("a team id of 255 emoji: its events reach analytics, its filter answers, and a page ending on it leads to the next", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const team = "🏢".repeat(254) + "z";
  const other = "🏢".repeat(255);
  for (const id of [team, other]) assert.is((await api.post("/teams", { external_team_id: id, name: "emoji" })).status, 201);
  const member = uid("member");
  await joinTeam(api, member, team);
  await sendAllNew(api, [event(member, 0.25, "m"), event(uid("solo"), 0.5, "m")]);
  const s = await until(api, `/analytics/summary?days=1&team_id=${enc(team)}`, (b) => b.total_events === 1);
  assert.equal([s.total_cost, s.total_events], [0.25, 1]);
  const top = await until(api, "/analytics/top-teams?days=1", (b) => b.teams.length === 1);
  assert.is(top.teams[0].team_id, team);
  // Pages of one team: the first ends on a long id, the cursor carrying it leads to the second.
  const first = await api.get("/teams?limit=1");
  assert.is(first.status, 200, JSON.stringify(first.body));
  const second = await api.get(`/teams?limit=1&cursor=${enc(first.body.next_cursor)}`);
  assert.is(second.status, 200, JSON.stringify(second.body));
  assert.equal([first.body.teams[0].team_id, second.body.teams[0].team_id].sort(), [team, other].sort());
});

t.run();
