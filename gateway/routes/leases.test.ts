import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { cappedUser, runReplicas, spawnReplica, CALL_COST, CALL_ESTIMATE } from "../../bench/lease-run.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";
import type { Api } from "../../test/support/http.ts";

const t = suite<{ stack: TestStack; api: Api; apiKey: string }>("budget leases over HTTP and across replica processes");

// Short leases so that a dead replica's slice returns within the test.
const TTL_MS = 1_500;
const GRACE_MS = 1_000;

t.before(async (ctx) => {
  ctx.stack = await startTestStack({ services: { ingestion: { leaseTtlMs: TTL_MS, leaseGraceMs: GRACE_MS } } });
  const p = await ctx.stack.newProduct();
  ctx.api = p.api;
  ctx.apiKey = p.apiKey;
});
t.after(async (ctx) => {
  await ctx.stack.close();
});

const close = (a: number, b: number, msg = "") => assert.ok(Math.abs(a - b) < 1e-6, `${msg} ${a} != ${b}`);
const acquire = (api: Api, user: string, body: Record<string, unknown>) => api.post(`/users/${user}/leases`, body);
const spendFrom = (api: Api, user: string, lease: string, cost: number) =>
  api.post("/events/batch", [{ id: randomUUID(), user_id: user, timestamp: new Date().toISOString(), model: "m", cost_total: cost, lease_id: lease }]);

t("grants slices of what remains, an equal share among the holders and one more, and refuses past the cap", async ({ api }) => {
  const user = await cappedUser(api, 100);
  const a = await acquire(api, user, { holder: "a", need: 1, want: 1000 });
  assert.is(a.status, 200, JSON.stringify(a.body));
  assert.is(a.body.limited, true);
  close(a.body.lease.added, 50, "first holder: remaining / 2");
  const b = await acquire(api, user, { holder: "b", need: 1, want: 1000 });
  close(b.body.lease.added, 50 / 3, "second holder: remaining / (1 + 2)");
  const small = await acquire(api, user, { holder: "c", need: 1, want: 2 });
  close(small.body.lease.added, 2, "never more than wanted");
  const big = await acquire(api, user, { holder: "d", need: 40, want: 40 });
  close(big.body.lease.added, 0, "need beyond what remains: refused");
  close(big.body.lease.remaining, 100 - 50 - 50 / 3 - 2);
  const again = await acquire(api, user, { holder: "a", need: 1, want: 1000 });
  assert.ok(again.body.lease.granted > 50, "asking again extends the holder's lease");
});

t("a holder that offers what it spares gives back what it holds beyond an equal share, never more than offered", async ({ api }) => {
  const user = await cappedUser(api, 120);
  const ttl_ms = 60_000;
  close((await acquire(api, user, { holder: "a", need: 1, want: 1000, ttl_ms })).body.lease.added, 60, "first holder: half");
  close((await acquire(api, user, { holder: "b", need: 1, want: 1000, ttl_ms })).body.lease.added, 20, "second holder: a third of the 60 left");
  // a holds 60, more than a third of the 120 unsettled (two holders and one more): 20 goes back, at most what it offers.
  const small = await acquire(api, user, { holder: "a", need: 0, want: 0, spare: 5, ttl_ms });
  assert.is(small.status, 200, JSON.stringify(small.body));
  close(small.body.lease.returned, 5, "never more than offered");
  close(small.body.lease.granted, 55);
  const offer = await acquire(api, user, { holder: "a", need: 0, want: 1000, spare: 50, ttl_ms });
  close(offer.body.lease.returned, 15, "down to its share");
  close(offer.body.lease.added, 0, "nothing granted while it gives back");
  close(offer.body.lease.granted, 40);
  close(offer.body.lease.remaining, 120 - 40 - 20);
  // At its share it is granted as without an offer (60 free among the two holders and one more).
  const again = await acquire(api, user, { holder: "a", need: 0, want: 1000, spare: 30, ttl_ms });
  close(again.body.lease.returned, 0);
  close(again.body.lease.added, 20);
  // What went back is granted to the holder that came after.
  close((await acquire(api, user, { holder: "b", need: 1, want: 1000, ttl_ms })).body.lease.added, 40 / 3, "b: a third of the 40 free");
  // Tokens are offered for a model only.
  const bad = await acquire(api, user, { holder: "a", need: 0, want: 0, spare_tokens: 5 });
  assert.is(bad.status, 400, JSON.stringify(bad.body));
  assert.match(bad.body.detail, /spare_tokens needs model/);
  assert.is((await acquire(api, user, { holder: "a", need: 0, want: 0, spare: -1 })).status, 422, "a negative offer");
});

t("a holder offers back what it spares of a team's cap: the holders of every member share it, the first ones hold no more than an equal share", async ({ api }) => {
  const team = `spare-crew-${randomUUID()}`;
  const plan = (await api.post("/config/plans", { plans: [{ name: `team-${randomUUID()}`, max_spend_per_period: 120 }] })).body.plans[0];
  assert.is((await api.post("/teams", { external_team_id: team, name: "Spare crew" })).status, 201);
  const day = 86_400_000;
  const sub = await api.post(`/teams/${team}/subscription`, { plan_id: plan.id, period_start: new Date(Date.now() - day).toISOString(), period_end: new Date(Date.now() + 20 * day).toISOString() });
  assert.is(sub.status, 200, JSON.stringify(sub.body));
  const [a, b] = [`member-a-${randomUUID()}`, `member-b-${randomUUID()}`];
  for (const u of [a, b]) {
    assert.is((await api.post("/users", { external_user_id: u })).status, 201);
    assert.is((await api.request("PUT", `/users/${u}/team`, { body: { team_id: team } })).status, 200);
  }
  const ttl_ms = 60_000;
  const ask = (user: string, holder: string, teamAsk: Record<string, unknown>) => acquire(api, user, { holder, need: 0, want: 0, ttl_ms, team: teamAsk });
  close((await ask(a, "ta", { need: 1, want: 1000 })).body.lease.team.added, 60, "first holder: half");
  close((await ask(b, "tb", { need: 1, want: 1000 })).body.lease.team.added, 20, "second holder: a third of the 60 left");
  // ta holds 60 of the team's cap, more than a third of the 120 unsettled: 20 goes back, never more than offered.
  const small = await ask(b, "ta", { need: 0, want: 0, spare: 5 });
  assert.is(small.status, 200, JSON.stringify(small.body));
  close(small.body.lease.team.returned, 5, "never more than offered");
  close(small.body.lease.team.granted, 55);
  const offer = await ask(a, "ta", { need: 0, want: 1000, spare: 50 });
  close(offer.body.lease.team.returned, 15, "down to its share");
  close(offer.body.lease.team.added, 0, "nothing granted while it gives back");
  close(offer.body.lease.team.granted, 40);
  close(offer.body.lease.team.remaining, 120 - 40 - 20);
  // What went back is granted to the holder that came after (a third of the 60 free).
  close((await ask(b, "tb", { need: 1, want: 1000 })).body.lease.team.added, 20);
  const bad = await ask(a, "ta", { need: 0, want: 0, spare_tokens: 5 });
  assert.is(bad.status, 400, JSON.stringify(bad.body));
  assert.match(bad.body.detail, /team\.spare_tokens needs team\.model/);
  assert.is((await ask(a, "ta", { need: 0, want: 0, spare: -1 })).status, 422, "a negative offer");
});

t("holders that ask at once are all granted, as if one after another, none refused for contention", async ({ api }) => {
  // Each conditional write that loses to another holder's is retried a bounded number of
  // times: asked one write per holder, 120 holders at once would exhaust it (503).
  const user = await cappedUser(api, 2_000);
  const holders = Array.from({ length: 120 }, (_, i) => `h${i}`);
  // Leases of a minute: with this suite's 1.5 s default, a loaded machine that takes longer to
  // answer all 120 lets the first ones lapse, and the later grants rightly count fewer holders.
  const answers = await Promise.all(holders.map((holder) => acquire(api, user, { holder, need: 1, want: 5, ttl_ms: 60_000 })));
  for (const a of answers) assert.is(a.status, 200, JSON.stringify(a.body));
  const grants = answers.map((a) => a.body.lease).sort((x, y) => x.holders - y.holders);
  assert.equal(grants.map((g) => g.holders), holders.map((_, i) => i + 1), "each grant counts every holder granted before it");
  grants.forEach((g, i) => {
    close(g.added, 5, `holder ${i + 1}: what it wanted`);
    close(g.remaining, 2_000 - 5 * (i + 1), `holder ${i + 1}: what remains after it`);
  });
});

t("usage events settle against their lease: spend and return never count twice, in either order", async ({ api }) => {
  const user = await cappedUser(api, 100);
  await acquire(api, user, { holder: "x", need: 1, want: 40 }); // 40 of 100 (half is 50)
  // Spent 10 and settled, then returned with used 10: nothing outstanding, 90 remain.
  assert.is((await spendFrom(api, user, "x", 10)).status, 200);
  const r1 = await api.post(`/users/${user}/leases/x/release`, { used: 10 });
  assert.is(r1.status, 200, JSON.stringify(r1.body));
  close(r1.body.lease.granted, 10);
  close(r1.body.lease.spent, 10);
  const probe = await acquire(api, user, { holder: "p", need: 1, want: 1 });
  close(probe.body.lease.remaining + probe.body.lease.added, 90, "settled 10, nothing held by x");
  // Return first (used 30 of the renewed lease), settlement after: held until it arrives.
  await acquire(api, user, { holder: "y", need: 20, want: 20 });
  await api.post(`/users/${user}/leases/y/release`, { used: 20 });
  const before = await acquire(api, user, { holder: "q", need: 1, want: 1 });
  close(before.body.lease.remaining + before.body.lease.added, 100 - 10 - 1 - 20, "unsettled spend still held");
  await spendFrom(api, user, "y", 20);
  const after = await acquire(api, user, { holder: "q", need: 1, want: 1 });
  const usage = await api.get(`/users/${user}/usage`);
  close(usage.body.total_cost, 30);
  close(after.body.lease.remaining + 2, 100 - 30 - 1, "settled once: cap - 30 - the two 1-dollar probes");
});

t("token caps: whole slices of a model's tokens, settled by the events' tokens, given back per model", async ({ api }) => {
  const user = await cappedUser(api, null, 10_000);
  const tokensOf = async (holder: string, need: number, want: number, model = "m") =>
    (await acquire(api, user, { holder, need: 0, want: 0, model, need_tokens: need, want_tokens: want })).body;
  const a = await tokensOf("a", 100, 100_000, "m-2024-08-06");
  assert.is(a.limited, true);
  assert.is(a.lease.spend_limited, false, "no spend cap: only the model's tokens are leased");
  assert.equal(a.lease.tokens, { model: "m", granted: 5000, added: 5000, spent: 0, remaining: 5000, holders: 1, returned: 0 }, "half of the cap, by the normalized name");
  const b = await tokensOf("b", 1, 100_000);
  assert.is(b.lease.tokens.added, 1666, "second holder: remaining / (1 + 2), rounded down");
  assert.is((await tokensOf("c", 3, 3)).lease.tokens.added, 3);
  // 3,000 tokens spent from a's slice: settled against it, so what remains does not move.
  const spent = await api.post("/events/batch", [
    { id: randomUUID(), user_id: user, timestamp: new Date().toISOString(), model: "m", input_tokens: 2000, output_tokens: 1000, lease_id: "a" },
  ]);
  assert.is(spent.status, 200);
  assert.is((await tokensOf("p", 0, 0)).lease.tokens.remaining, 10_000 - 5000 - 1666 - 3);
  const back = await api.post(`/users/${user}/leases/a/release`, { used: 0, used_tokens: { m: 3000 } });
  assert.is(back.status, 200, JSON.stringify(back.body));
  assert.is((await tokensOf("p", 0, 0)).lease.tokens.remaining, 10_000 - 3000 - 1666 - 3, "a's unused 2,000 tokens back in the pool");
  assert.is((await tokensOf("d", 5800, 5800)).lease.tokens.added, 0, "more than remains: refused");
  assert.equal((await tokensOf("a", 1, 1, "other")), { limited: false, lease: null }, "an uncapped model of a user without a spend cap");
  assert.is((await acquire(api, user, { holder: "a", need: 0, want: 0, need_tokens: 1, want_tokens: 1 })).status, 400, "tokens need a model");
  assert.is((await acquire(api, user, { holder: "a", need: 0, want: 0, model: "m", need_tokens: 2, want_tokens: 1 })).status, 400);
  assert.is((await acquire(api, user, { holder: "a", need: 0, want: 0, model: "m", need_tokens: 1.5 })).status, 422);
  assert.is((await api.post(`/users/${user}/leases/a/release`, { used: 0, used_tokens: { m: -1 } })).status, 422);
});

t("the OpenAPI document has the lease routes and lease_id on usage events", async ({ stack }) => {
  const doc = (await stack.api.get("/openapi.json")).body;
  const acquireOp = doc.paths["/api/v1/users/{user_id}/leases"]?.post;
  assert.ok(acquireOp, "POST /users/{user_id}/leases");
  assert.ok(acquireOp.responses["200"] && acquireOp.responses["404"] && acquireOp.responses["422"]);
  assert.ok(doc.paths["/api/v1/users/{user_id}/leases/{lease_id}/release"]?.post, "POST /users/{user_id}/leases/{lease_id}/release");
  const batch = JSON.stringify(doc.paths["/api/v1/events/batch"].post.requestBody);
  assert.match(batch, /lease_id/);
});

t("validation, 404 for unknown users, leases and other products, unlimited users", async ({ stack, api }) => {
  const user = await cappedUser(api, 10);
  assert.is((await acquire(api, user, { holder: "a.b", need: 1, want: 1 })).status, 422);
  assert.is((await acquire(api, user, { holder: "a", need: -1, want: 1 })).status, 422);
  assert.is((await acquire(api, user, { holder: "a", need: 1, want: 1, extra: 1 })).status, 422);
  assert.is((await acquire(api, user, { holder: "a", need: 2, want: 1 })).status, 400);
  assert.is((await acquire(api, "nobody", { holder: "a", need: 1, want: 1 })).status, 404);
  assert.is((await api.post(`/users/${user}/leases/none/release`, { used: 0 })).status, 404);
  assert.is((await api.post(`/users/${user}/leases/a.b/release`, { used: 0 })).status, 400);
  const bad = await api.post("/events/batch", [{ id: randomUUID(), user_id: user, timestamp: new Date().toISOString(), lease_id: "no.dots" }]);
  assert.is(bad.status, 422);
  const other = await stack.newProduct("other");
  assert.is((await acquire(other.api, user, { holder: "a", need: 1, want: 1 })).status, 404, "another product's user reads as not found");
  assert.is((await stack.api.post(`/users/${user}/leases`, { holder: "a", need: 1, want: 1 })).status, 401);
  const free = await api.post("/config/plans", { plans: [{ name: `free-${randomUUID()}` }] });
  await api.post("/users", { external_user_id: "free-user" });
  await api.post("/users/free-user/subscription", { plan_id: free.body.plans[0].id });
  const unlimited = await acquire(api, "free-user", { holder: "a", need: 1, want: 1 });
  assert.is(unlimited.status, 200);
  assert.equal(unlimited.body, { limited: false, lease: null });
});

t("8 replica processes x 100 concurrent calls never spend past the cap", async ({ stack, api, apiKey }) => {
  const cap = 400 * CALL_ESTIMATE;
  const user = await cappedUser(api, cap);
  const run = await runReplicas(api, { baseUrl: stack.apiUrl, apiKey, userId: user, replicas: 8, concurrency: 100, leases: true, ttlMs: 10_000, stopAfterMs: 800 });
  assert.ok(run.spend <= cap + 1e-6, `spent ${run.spend} of a cap of ${cap}`);
  close(run.spend, run.calls * CALL_COST, "every call settled once");
  assert.ok(run.calls > 0);
});

t("a replica killed holding a slice: the slice returns after its expiry and others spend it", async ({ stack, api, apiKey }) => {
  const cap = 40 * CALL_ESTIMATE;
  const user = await cappedUser(api, cap);
  const env = { METER_API_KEY: apiKey, METER_BASE_URL: stack.apiUrl, LEASE_USER: user, LEASE_TTL_MS: String(TTL_MS) };
  const holder = spawnReplica({ ...env, LEASE_MODE: "hold" });
  await holder.printed("held");
  const held = await acquire(api, user, { holder: "probe", need: 0, want: 0 });
  const heldByDead = cap - held.body.lease.remaining;
  assert.ok(heldByDead >= cap / 2 - 1e-6, `the dead replica holds ${heldByDead}`);
  holder.kill();
  // The survivor keeps trying while refused for longer than expiry + grace, so it sees the slice come back.
  const run = await spawnReplica({ ...env, LEASE_CONCURRENCY: "4", LEASE_STOP_AFTER_MS: String(3 * (TTL_MS + GRACE_MS)) }).done;
  const usage = await api.get(`/users/${user}/usage`);
  assert.ok(usage.body.total_cost <= cap + 1e-6);
  assert.ok(usage.body.total_cost > cap - heldByDead, `spent ${usage.body.total_cost}: more than was left beside the dead replica's slice`);
  close(usage.body.total_cost, run.calls * CALL_COST);
});

t.run();
