// AcquireLease over gRPC: its checks, and what it grants (or that there is nothing to lease).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { dimensionKey } from "@meter/rules";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { productWithUser, usageEvent, withIngestion, type IngestionSuite } from "../testing/suite.ts";
import { eventually } from "../../../test/support/eventually.ts";

const t = suite<IngestionSuite>("AcquireLease");
withIngestion(t);

t("refuses want below need, tokens without a model, a bad holder or ttl; an unknown user is not found", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, { max_spend_per_period: 10 });
  const ok = { productId, userId, holder: "h1", need: 1, want: 2 };
  for (const req of [{ need: 3 }, { wantTokens: 10n }, { holder: "not a lease id" }, { ttlMs: -1n }, { model: "" }]) {
    assert.is((await rpcFailure(ingestion.acquireLease({ ...ok, ...req })))?.code, Code.InvalidArgument, Object.keys(req)[0]);
  }
  assert.is((await rpcFailure(ingestion.acquireLease({ ...ok, userId: "nobody" })))?.code, Code.NotFound);
});

t("a user with no cap has nothing to lease; a capped one is granted spend and the capped model's tokens", async ({ stack, ingestion }) => {
  const free = await productWithUser(stack);
  assert.is((await ingestion.acquireLease({ productId: free.productId, userId: free.userId, holder: "h1", need: 1, want: 2 })).limited, false);

  const { productId, userId } = await productWithUser(stack, { max_spend_per_period: 10, model_limits: { "gpt-4o": { max_tokens_per_period: 1_000 } } });
  const res = await ingestion.acquireLease({ productId, userId, holder: "h1", need: 1, want: 2, model: "gpt-4o", needTokens: 10n, wantTokens: 100n });
  assert.is(res.limited, true);
  const lease = res.lease!;
  assert.equal([lease.leaseId, lease.spendLimited, lease.tokens?.model], ["h1", true, "gpt-4o"]);
  assert.ok(lease.granted >= 1 && lease.granted <= 2, `granted ${lease.granted}`);
  assert.ok(lease.tokens!.granted >= 10n && lease.tokens!.granted <= 100n, `tokens granted ${lease.tokens!.granted}`);
});

t("a plan capping only a model's tokens grants them again and again (the lease holds no dollars)", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, { max_spend_per_period: null, model_limits: { "gpt-4o": { max_tokens_per_period: 1_000 } } });
  const ask = () => ingestion.acquireLease({ productId, userId, holder: "h1", need: 0, want: 0, model: "gpt-4o", needTokens: 10n, wantTokens: 100n });
  const first = await ask();
  const second = await ask();
  assert.equal([first.lease!.tokens?.granted, second.lease!.tokens?.granted, second.lease!.granted, second.lease!.spendLimited], [100n, 200n, 0, false]);
});

t("a plan with windows is limited even for a request that asks none of them, or only a window that has ended", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, { limits: [{ name: "rpm", metric: "requests", max: 60, window: "minute" }] });
  const dimension = dimensionKey({ metric: "requests", window: "minute" });
  const none = await ingestion.acquireLease({ productId, userId, holder: "h1", need: 0, want: 0 });
  assert.is(none.limited, true, "no window asked");
  assert.equal(none.lease!.windows, []);
  // A client whose waiting call was sized in the minute before asks for that minute's window.
  const lastMinute = timestampFromMs(Date.now() - (Date.now() % 60_000) - 60_000);
  const ended = await ingestion.acquireLease({ productId, userId, holder: "h1", need: 0, want: 0, windows: [{ dimension, windowStart: lastMinute, need: 1, want: 10 }] });
  assert.is(ended.limited, true, "only an ended window asked");
  assert.equal([ended.lease!.windows[0]?.limited, ended.lease!.windows[0]?.added], [true, 0]);
  // The current minute is granted as before.
  const current = await ingestion.acquireLease({ productId, userId, holder: "h1", need: 0, want: 0, windows: [{ dimension, need: 1, want: 10 }] });
  assert.equal([current.limited, current.lease!.windows[0]?.added], [true, 10]);
  // The same window asked twice would be answered twice while one slice is kept: refused.
  const twice = await rpcFailure(ingestion.acquireLease({ productId, userId, holder: "h2", need: 0, want: 0, windows: [{ dimension, need: 10, want: 10 }, { dimension, need: 0, want: 1 }] }));
  assert.is(twice?.code, Code.InvalidArgument);
  assert.match(twice!.rawMessage, /windows\[1\] names the same window as windows\[0\]/);
});

t("a member's lease holds a slice of the team's spend cap: one ledger for the holders of every member, settled by the team's counting, given back with team_used", async ({ stack, ingestion }) => {
  const { api, productId, userId: a } = await productWithUser(stack);
  const b = `u-b-${Date.now()}`;
  await api.post("/users", { external_user_id: b });
  const plan = (await api.post("/config/plans", { plans: [{ name: `team-${Date.now()}`, max_spend_per_period: 10 }] })).body.plans[0];
  await api.post("/teams", { external_team_id: "crew", name: "Crew" });
  const day = 86_400_000;
  const sub = await api.post("/teams/crew/subscription", { plan_id: plan.id, period_start: new Date(Date.now() - day).toISOString(), period_end: new Date(Date.now() + 20 * day).toISOString() });
  assert.is(sub.status, 200, JSON.stringify(sub.body));
  for (const u of [a, b]) assert.is((await api.request("PUT", `/users/${u}/team`, { body: { team_id: "crew" } })).status, 200);

  // Members without caps of their own: the team's slice alone makes the lease.
  const first = await ingestion.acquireLease({ productId, userId: a, holder: "h1", need: 0, want: 0, team: { need: 1, want: 4 } });
  assert.is(first.limited, true);
  assert.equal([first.lease!.team?.teamId, first.lease!.team?.spendLimited, first.lease!.team?.granted, first.lease!.team?.remaining], ["crew", true, 4, 6]);
  // Another holder serving another member draws on the same cap: at most an equal share of what is left.
  const second = await ingestion.acquireLease({ productId, userId: b, holder: "h2", need: 0, want: 0, team: { need: 1, want: 10 } });
  assert.equal([second.lease!.team?.added, second.lease!.team?.remaining, second.lease!.team?.holders], [2, 4, 2]);
  // The first holder serving the second member grows its one team slice.
  const grown = await ingestion.acquireLease({ productId, userId: b, holder: "h1", need: 0, want: 0, team: { need: 0.5, want: 1 } });
  assert.equal([grown.lease!.team?.added, grown.lease!.team?.granted, grown.lease!.team?.remaining], [1, 5, 3]);

  // $3 spent from h1 by a: counted for the team and settled against h1's slice in the same update.
  await ingestion.ingestUsageEvents({ productId, events: [usageEvent(a, { costTotal: 3, leaseId: "h1" })] });
  await eventually(async () => (await api.get("/teams/crew/usage")).body.total_cost === 3, 30_000, "the team to count the event");
  // h1 gives back what it did not use (it used $3 for every member): what remains is the cap less the settled $3 and h2's $2.
  const released = await ingestion.releaseLease({ productId, userId: b, leaseId: "h1", used: 0, teamUsed: 3 });
  assert.equal([released.lease!.team?.granted, released.lease!.team?.spent], [3, 3]);
  const third = await ingestion.acquireLease({ productId, userId: a, holder: "h3", need: 0, want: 0, team: { need: 0, want: 100 } });
  assert.is(third.lease!.team!.added + third.lease!.team!.remaining, 5);
  // Past the cap nothing is granted.
  const refused = await ingestion.acquireLease({ productId, userId: a, holder: "h4", need: 0, want: 0, team: { need: 9, want: 9 } });
  assert.equal([refused.limited, refused.lease!.team?.added], [true, 0]);
});

t("a member's lease holds slices of the team's windows beside their counts, shared by every member the holder serves, settled by the team's counting", async ({ stack, ingestion }) => {
  const { productId, api } = await productWithUser(stack);
  const [a, b] = ["wa", "wb"];
  for (const u of [a, b]) await api.post("/users", { external_user_id: u });
  const limits = [
    // A calendar window within the team's period: counted (and leased) in the team's period counter.
    { name: "team-daily", metric: "spend", max: 10, window: "day", scope: "team" },
    // A rolling window: in the team's window document.
    { name: "team-hourly-calls", metric: "requests", max: 20, window: "rolling", duration_minutes: 60, scope: "team" },
  ];
  const plan = (await api.post("/config/plans", { plans: [{ name: `team-w-${Date.now()}`, limits }] })).body.plans[0];
  await api.post("/teams", { external_team_id: "wcrew", name: "W crew" });
  const day = 86_400_000;
  const sub = await api.post("/teams/wcrew/subscription", { plan_id: plan.id, period_start: new Date(Date.now() - 40 * day).toISOString(), period_end: new Date(Date.now() + 40 * day).toISOString() });
  assert.is(sub.status, 200, JSON.stringify(sub.body));
  for (const u of [a, b]) assert.is((await api.request("PUT", `/users/${u}/team`, { body: { team_id: "wcrew" } })).status, 200);
  const daily = dimensionKey({ metric: "spend", window: "day" });
  const calls = dimensionKey({ metric: "requests", window: "rolling", duration_minutes: 60 });
  const ask = (userId: string, holder: string, windows: { dimension: string; need: number; want: number }[]) =>
    ingestion.acquireLease({ productId, userId, holder, need: 0, want: 0, team: { need: 0, want: 0, windows } });

  // A team plan without a spend cap but with team windows is limited: the windows are leased.
  const first = await ask(a, "h1", [{ dimension: daily, need: 1, want: 4 }, { dimension: calls, need: 1, want: 5 }, { dimension: "spend:month::", need: 1, want: 1 }]);
  assert.is(first.limited, true);
  const team = first.lease!.team!;
  assert.equal([team.teamId, team.spendLimited], ["wcrew", false]);
  assert.equal(team.windows.map((w) => [w.limited, w.added, w.remaining]), [[true, 4, 6], [true, 5, 15], [false, 0, 0]]);
  assert.ok(team.windows[0]!.windowEnd, "a calendar window's slice says when it ends");
  // Another holder serving the other member shares the same windows.
  const second = await ask(b, "h2", [{ dimension: daily, need: 1, want: 10 }]);
  assert.equal([second.lease!.team!.windows[0]!.added, second.lease!.team!.windows[0]!.remaining, second.lease!.team!.windows[0]!.holders], [2, 4, 2]);

  // $3 (one call) spent from h1's slices by a, then $1 not from a lease by b: both counted for the team.
  await ingestion.ingestUsageEvents({ productId, events: [usageEvent(a, { costTotal: 3, leaseId: "h1" }), usageEvent(b, { costTotal: 1 })] });
  await eventually(async () => (await api.get("/teams/wcrew/usage")).body.total_cost === 4, 30_000, "the team to count the events");
  // h1's slices were settled in the counting updates: asking for nothing more shows what was spent from them.
  const seen = await ask(a, "h1", [{ dimension: daily, need: 0, want: 0 }, { dimension: calls, need: 0, want: 0 }]);
  assert.equal(seen.lease!.team!.windows.map((w) => [w.granted, w.spent]), [[4, 3], [5, 1]]);
  // What remains of the day: $10 less $4 counted, less what h1 ($1) and h2 ($2) hold unspent.
  const third = await ask(a, "h3", [{ dimension: daily, need: 0, want: 100 }]);
  assert.is(third.lease!.team!.windows[0]!.added + third.lease!.team!.windows[0]!.remaining, 3);
  // h1 gives back what it did not use of its slices; what it used stays counted.
  const released = await ingestion.releaseLease({ productId, userId: b, leaseId: "h1", used: 0, teamUsedWindows: [{ dimension: daily, used: 3 }, { dimension: calls, used: 1 }] });
  assert.ok(released.lease!.team, "the team part of the release");
  const after = await ask(b, "h4", [{ dimension: daily, need: 0, want: 100 }, { dimension: calls, need: 0, want: 100 }]);
  const [d, c] = after.lease!.team!.windows;
  // The day: $10 - $4 counted - h2's $2 - h3's slice; the calls: 20 - 2 counted (h1's 5 given back to its 1 used).
  assert.is(d!.added + d!.remaining, 10 - 4 - 2 - third.lease!.team!.windows[0]!.added);
  assert.is(c!.added + c!.remaining, 18);
  // Past the day's cap nothing is granted.
  const refused = await ask(a, "h5", [{ dimension: daily, need: 9, want: 9 }]);
  assert.equal([refused.limited, refused.lease!.team!.windows[0]!.added], [true, 0]);
});

t("member-scope windows of a team plan are leased per member in the member's window document, settled by the member's counting", async ({ stack, ingestion }) => {
  const { productId, api } = await productWithUser(stack);
  const [a, b] = ["ma", "mb"];
  for (const u of [a, b]) await api.post("/users", { external_user_id: u });
  const limits = [{ name: "seat-daily", metric: "spend", max: 1, window: "day", scope: "member" }];
  const plan = (await api.post("/config/plans", { plans: [{ name: `team-m-${Date.now()}`, limits }] })).body.plans[0];
  await api.post("/teams", { external_team_id: "mcrew", name: "M crew" });
  const day = 86_400_000;
  await api.post("/teams/mcrew/subscription", { plan_id: plan.id, period_start: new Date(Date.now() - 40 * day).toISOString(), period_end: new Date(Date.now() + 40 * day).toISOString() });
  for (const u of [a, b]) assert.is((await api.request("PUT", `/users/${u}/team`, { body: { team_id: "mcrew" } })).status, 200);
  const daily = dimensionKey({ metric: "spend", window: "day" });
  const ask = (userId: string, holder: string, need: number, want: number) =>
    ingestion.acquireLease({ productId, userId, holder, need: 0, want: 0, memberWindows: [{ dimension: daily, need, want }] });

  const first = await ask(a, "h1", 0.2, 0.5);
  assert.is(first.limited, true, "a member whose team plan has seat windows has something to lease");
  assert.equal(first.lease!.memberWindows.map((w) => [w.limited, w.added, w.remaining]), [[true, 0.5, 0.5]]);
  // Each member's seat is its own: b's grant does not see a's slice.
  const other = await ask(b, "h1", 0, 1);
  assert.equal([other.lease!.memberWindows[0]!.added, other.lease!.memberWindows[0]!.remaining], [0.5, 0.5]);

  // $0.30 spent from h1 by a: counted in a's seat window and settled against h1's slice of it.
  await ingestion.ingestUsageEvents({ productId, events: [usageEvent(a, { costTotal: 0.3, leaseId: "h1" })] });
  await eventually(async () => (await api.get(`/users/${a}/usage`)).body.total_cost === 0.3, 30_000, "a's usage to be counted");
  const seen = await ask(a, "h1", 0, 0);
  assert.equal([seen.lease!.memberWindows[0]!.granted, seen.lease!.memberWindows[0]!.spent], [0.5, 0.3]);
  // Given back down to what was used: what remains of a's day is $1 less the $0.30 counted.
  await ingestion.releaseLease({ productId, userId: a, leaseId: "h1", used: 0, usedMemberWindows: [{ dimension: daily, used: 0.3 }] });
  const after = await ask(a, "h2", 0, 100);
  assert.is(after.lease!.memberWindows[0]!.added + after.lease!.memberWindows[0]!.remaining, 0.7);
  // A user in no team has no member windows to lease.
  await api.post("/users", { external_user_id: "loner" });
  const loner = await ask("loner", "h1", 0, 1);
  assert.equal([loner.limited, loner.lease?.memberWindows[0]?.limited], [false, undefined]);
});

t("a member's lease holds a slice of its team's token cap of the model asked for, settled by the team's counting, given back with team_used_tokens", async ({ stack, ingestion }) => {
  const { productId, api } = await productWithUser(stack);
  const [a, b] = ["ka", "kb"];
  for (const u of [a, b]) await api.post("/users", { external_user_id: u });
  const plan = (await api.post("/config/plans", { plans: [{ name: `team-k-${Date.now()}`, model_limits: { "gpt-4o": { max_tokens_per_period: 1_000 } } }] })).body.plans[0];
  await api.post("/teams", { external_team_id: "kcrew", name: "K crew" });
  const day = 86_400_000;
  await api.post("/teams/kcrew/subscription", { plan_id: plan.id, period_start: new Date(Date.now() - day).toISOString(), period_end: new Date(Date.now() + 20 * day).toISOString() });
  for (const u of [a, b]) assert.is((await api.request("PUT", `/users/${u}/team`, { body: { team_id: "kcrew" } })).status, 200);
  const ask = (userId: string, holder: string, needTokens: bigint, wantTokens: bigint, model = "gpt-4o-2024-08-06") =>
    ingestion.acquireLease({ productId, userId, holder, need: 0, want: 0, team: { need: 0, want: 0, model, needTokens, wantTokens } });

  // A dated name is the plan's model; a team plan capping only tokens is limited.
  const first = await ask(a, "h1", 10n, 300n);
  assert.is(first.limited, true);
  const t1 = first.lease!.team!;
  assert.equal([t1.spendLimited, t1.tokens?.model, t1.tokens?.added, t1.tokens?.remaining], [false, "gpt-4o", 300n, 700]);
  assert.is((await ask(a, "h1", 0n, 0n, "o3")).limited, false, "a model the team plan does not cap: nothing to lease");
  const second = await ask(b, "h2", 0n, 1_000n);
  assert.equal([second.lease!.team!.tokens?.added, second.lease!.team!.tokens?.holders], [233n, 2]);
  // 100 tokens from h1's slice: counted for the team and settled against it.
  await ingestion.ingestUsageEvents({ productId, events: [usageEvent(a, { inputTokens: 60n, outputTokens: 40n, leaseId: "h1" })] });
  await eventually(async () => (await api.get("/teams/kcrew/usage")).body.total_tokens === 100, 30_000, "the team to count the event");
  const seen = await ask(a, "h1", 0n, 0n);
  assert.equal([seen.lease!.team!.tokens?.granted, seen.lease!.team!.tokens?.spent], [300n, 100n]);
  // Given back down to what h1 used: 1,000 - 100 counted - h2's 233.
  const released = await ingestion.releaseLease({ productId, userId: a, leaseId: "h1", used: 0, teamUsedTokens: { "gpt-4o": 100n } });
  assert.ok(released.lease!.team);
  const third = await ask(b, "h3", 0n, 10_000n);
  assert.is(Number(third.lease!.team!.tokens!.added) + third.lease!.team!.tokens!.remaining, 667);
  assert.is((await rpcFailure(ingestion.acquireLease({ productId, userId: a, holder: "h4", need: 0, want: 0, team: { need: 0, want: 0, wantTokens: 5n } })))?.code, Code.InvalidArgument, "tokens without a model");
});

t.run();
