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
type Api = Awaited<ReturnType<TestStack["newProduct"]>>["api"];
const seat = (session: { limits: { reason: string; used: number }[] }) => session.limits.find((d) => d.reason === "team:limit:seat")!.used;

/**
 * A member of a team with a member-scope seat, $2 spent, a first session read (the next one reads
 * the member's window document beside the lookup); then new team dates from two days ago, told
 * only now: the member's share belongs in the team's new period.
 */
async function teamChangedLate(api: Api) {
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
  assert.is(seat((await api.get("/users/held-user/session")).body), 2);
  assert.is((await api.post(`/teams/${teamId}/subscription`, dates(joined - 2 * DAY, joined + 30 * DAY))).status, 200);
  return { teamId, newStart: new Date(joined - 2 * DAY).toISOString() };
}

t("a team's move made by a read about the team while a member's session waited on its lookup shows in that session", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const { teamId, newStart } = await teamChangedLate(api);
  held.arm();
  const session = api.get("/users/held-user/session");
  // The session's early reads are under way, its lookup held; a read about the team moves the
  // member's share into the team's new period meanwhile (the seat's field in the member's window document).
  await held.entered();
  assert.is((await api.get(`/teams/${teamId}/usage`)).body.total_cost, 2, "moved into the new period");
  held.release();
  const answered = await session;
  assert.is(answered.status, 200);
  assert.is(answered.body.team.billing_period.start, newStart);
  assert.is(seat(answered.body), 2, "the seat of the new period holds the member's share");
});

// A read about a team names no member, so its move once went uncounted among the process's moves;
// a session whose own catch-up then found the change applied (by another read of the member, or
// the follower) answered from its early reads.
t("a team's move stays visible to a waiting session after another read of the member applied the change", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const { teamId, newStart } = await teamChangedLate(api);
  held.arm({ once: true });
  const session = api.get("/users/held-user/session");
  await held.entered();
  assert.is((await api.get(`/teams/${teamId}/usage`)).body.total_cost, 2, "moved into the new period");
  // Another session of the member, not held, applies the member's change (nothing left to move).
  assert.is(seat((await api.get("/users/held-user/session")).body), 2, "a session begun after the move");
  held.release();
  const answered = await session;
  assert.is(answered.status, 200);
  assert.is(answered.body.team.billing_period.start, newStart);
  assert.is(seat(answered.body), 2, "the seat of the new period holds the member's share");
});

t.run();
