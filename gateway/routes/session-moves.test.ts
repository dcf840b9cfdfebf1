import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { heldDirectory } from "../../services/ingestion/testing/held-directory.ts";
import { joinTeam } from "../../test/support/rest.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";

// A session reads a user's documents before the plans lookup answers (services/ingestion/handlers/
// get-session.ts); a late change's move made meanwhile by another request makes those reads stale,
// and the session reads again rather than answer from before the move.
const held = heldDirectory("held-user");
const t = suite<{ stack: TestStack }>("a session whose early reads a late change's move overtook");

t.before(async (ctx) => {
  ctx.stack = await startTestStack({ services: { ingestion: { users: held.directory } } });
  held.connect(ctx.stack.rpcUrl);
});
t.after(async (ctx) => {
  held.release();
  await ctx.stack.close();
});

const DAY = 86_400_000;

t("a team's move made by a read about the team while a member's session waited on its lookup shows in that session", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const plans = await api.post("/config/plans", {
    plans: [{ name: "member" }, { name: "team", max_spend_per_period: 100, limits: [{ name: "seat", metric: "spend", max: 40, window: "period", scope: "member" }] }],
  });
  const [memberPlan, teamPlan] = plans.body.plans.map((p: { id: string }) => p.id);
  const teamId = `acme-${randomUUID()}`;
  assert.is((await api.post("/teams", { external_team_id: teamId, name: "Acme" })).status, 201);
  const joined = Date.now();
  const dates = (from: number, to: number) => ({ plan_id: teamPlan, period_start: new Date(from).toISOString(), period_end: new Date(to).toISOString() });
  assert.is((await api.post(`/teams/${teamId}/subscription`, dates(joined - 20 * DAY, joined + 10 * DAY))).status, 200);
  await joinTeam(api, "held-user", teamId);
  assert.is((await api.post("/users/held-user/subscription", { plan_id: memberPlan })).status, 200);
  assert.is((await api.post("/events/batch", [{ id: randomUUID(), user_id: "held-user", timestamp: new Date().toISOString(), cost_total: 2 }])).status, 200);
  const seat = (session: { limits: { reason: string; used: number }[] }) => session.limits.find((d) => d.reason === "team:limit:seat")!.used;
  // A first session: the next one reads the member's window document beside the lookup.
  assert.is(seat((await api.get("/users/held-user/session")).body), 2);

  // New team dates from two days ago, told only now.
  assert.is((await api.post(`/teams/${teamId}/subscription`, dates(joined - 2 * DAY, joined + 30 * DAY))).status, 200);
  held.arm();
  const session = api.get("/users/held-user/session");
  // The session's early reads are under way, its lookup held; a read about the team moves the
  // member's share into the team's new period meanwhile (the seat's field in the member's window document).
  await held.entered();
  assert.is((await api.get(`/teams/${teamId}/usage`)).body.total_cost, 2, "moved into the new period");
  held.release();
  const answered = await session;
  assert.is(answered.status, 200);
  assert.is(answered.body.team.billing_period.start, new Date(joined - 2 * DAY).toISOString());
  assert.is(seat(answered.body), 2, "the seat of the new period holds the member's share");
});

t.run();
