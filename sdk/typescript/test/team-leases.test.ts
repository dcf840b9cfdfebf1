// Budget leases covering a team's cap (BUDGETS.md §4): replica processes serving different
// members of one team spend slices of the team's period spend cap granted from the team's own
// counter, so together they never pass it, however the members' calls are spread over them.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { spawnReplica, sum } from "../../../bench/lease-run.ts";
import { LimitExceededError, Meter } from "../src/index.ts";
import { reserveNow } from "../src/internal.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { createPlan, createTeam, DAY, startWithProduct, stopAll, subscribe, type ProductCtx } from "./support/fixtures.ts";
import { FaultProxy } from "./support/proxy.ts";

const t = suite<ProductCtx>("sdk: leases covering a team's cap across replica processes");

// Short lease lifetimes, so a dead replica's slice lapses within the test (the replica runs ask 60 s).
const TTL_MS = 2_000;
const GRACE_MS = 500;

t.before(async (ctx) => {
  await startWithProduct(ctx, "sdk team leases", { services: { ingestion: { leaseTtlMs: TTL_MS, leaseGraceMs: GRACE_MS } } });
});
t.after(async (ctx) => {
  await stopAll(ctx.stack, [], []);
});

// $0.01 per 1K tokens in and out: a replica's call estimates 1000 in + 1000 buffer = $0.02 and costs 1000 in + 500 out = $0.015.
const RATES = { m: { input: 0.01, output: 0.01 } };
const CALL_COST = 0.015;
const MEMBERS = 40;
const REPLICAS = 4;

/** Users `member-<name>-…`, each subscribed to a plan of their own that caps nothing: only their team's cap can stop them. */
async function subscribedMembers(ctx: ProductCtx, names: string[]): Promise<string[]> {
  const memberPlan = await createPlan(ctx.api, { max_spend_per_period: null, cost_rates: RATES, pre_call_estimate: true, pre_call_buffer_tokens: 1000 });
  return Promise.all(
    names.map(async (name) => {
      const id = `member-${name}-${Date.now()}`;
      const res = await ctx.api.post("/users", { external_user_id: id });
      if (res.status !== 201) throw new Error(`creating a user failed: ${res.status}`);
      await subscribe(ctx.api, id, memberPlan, new Date(Date.now() - DAY), new Date(Date.now() + 20 * DAY));
      return id;
    }),
  );
}

/**
 * 4 replica processes with leases serving 40 members of a team on `teamPlan`, until every call
 * is refused: what the team counted (every call, once), and the reasons the refusals named.
 */
async function replicasUntilRefused(ctx: ProductCtx, teamPlan: Record<string, unknown>): Promise<{ calls: number; spent: number; reasons: string[]; members: string[] }> {
  const members = await subscribedMembers(ctx, Array.from({ length: MEMBERS }, (_, i) => String(i)));
  const teamId = await createTeam(ctx.api, teamPlan, members);

  const replicas = Array.from({ length: REPLICAS }, (_, r) =>
    spawnReplica({
      METER_API_KEY: ctx.apiKey,
      METER_BASE_URL: ctx.stack.apiUrl,
      // Each replica serves every member, each starting at another one.
      LEASE_USERS: [...members.slice(r * 10), ...members.slice(0, r * 10)].join(","),
      LEASE_CONCURRENCY: "8",
      LEASE_ON: "true",
      LEASE_CALLS: "0",
      LEASE_TTL_MS: "60000",
      LEASE_STOP_AFTER_MS: "1500",
      LEASE_TOGETHER: "true",
    }),
  );
  await Promise.race([Promise.all(replicas.map((r) => r.printed("ready"))), Promise.all(replicas.map((r) => r.done))]);
  for (const r of replicas) r.go();
  const results = await Promise.all(replicas.map((r) => r.done));
  const calls = sum(results.map((r) => r.calls));
  assert.ok(results.every((r) => r.delivered), "every replica delivered its events");
  assert.ok(results.every((r) => r.calls > 0), `every replica was served: ${results.map((r) => r.calls).join(", ")}`);

  // Every call ran counted for the team, and nothing more: the team's counted spend is the calls' once settled.
  const spent = await eventually(
    async () => {
      const u = (await ctx.api.get(`/teams/${teamId}/usage`)).body as { total_cost: number };
      return Math.abs(u.total_cost - calls * CALL_COST) < 1e-9 ? u.total_cost : null;
    },
    120_000,
    "the team's usage to count every call",
  );
  console.log(`    ${calls} calls (${results.map((r) => r.calls).join(", ")}), ${sum(results.map((r) => r.lease_requests))} lease requests, team spend $${spent}`);
  return { calls, spent, members, reasons: [...new Set(results.flatMap((r) => r.reasons ?? []).map((x) => x.split(" ")[0]!))] };
}

t("4 replica processes with leases serving 40 members of one team on a $5 team cap: $0.00 overshoot, the refused calls name team:total_spend", async (ctx) => {
  const { spent, reasons } = await replicasUntilRefused(ctx, { max_spend_per_period: 5, cost_rates: RATES });
  assert.ok(spent <= 5, `the team's counted spend $${spent} is within its $5 cap (overshoot $${Math.max(0, spent - 5).toFixed(2)})`);
  // The replicas went on until the cap was (nearly) spent: what they held was given back and spent by the others.
  assert.ok(spent >= 4, `the team's cap was spent: $${spent}`);
  assert.equal(reasons, ["team:total_spend"], "every refused call named the team's cap");
});

t("the same on a team-scope daily window of $5 (no team spend cap): $0.00 over the window, the refused calls name team:limit:team-daily", async (ctx) => {
  const limits = [{ name: "team-daily", metric: "spend", max: 5, window: "day", scope: "team" }];
  const { spent, reasons } = await replicasUntilRefused(ctx, { max_spend_per_period: null, limits, time_zone: noonZone(), cost_rates: RATES });
  assert.ok(spent <= 5, `the team's counted spend today $${spent} is within its $5 window (over by $${Math.max(0, spent - 5).toFixed(2)})`);
  assert.ok(spent >= 4, `the team's window was spent: $${spent}`);
  assert.equal(reasons, ["team:limit:team-daily"], "every refused call named the team's window");
});

t("the same on a team token cap of 200,000 tokens of one model (no team spend cap): the team's tokens within it, the refused calls name team:model_limit:m", async (ctx) => {
  const { calls, reasons } = await replicasUntilRefused(ctx, { max_spend_per_period: null, model_limits: { m: { max_tokens_per_period: 200_000 } }, cost_rates: RATES });
  // A call uses 1,500 tokens (1,000 in, 500 out).
  assert.ok(calls * 1_500 <= 200_000, `the team's tokens ${calls * 1_500} are within its cap of 200,000`);
  assert.ok(calls * 1_500 >= 150_000, `the team's token cap was spent: ${calls * 1_500}`);
  assert.equal(reasons, ["team:model_limit:m"], "every refused call named the team's token cap");
});

/** A time zone where it is about noon now: a day's window does not end during a test. */
function noonZone(): string {
  const offset = ((12 - new Date().getUTCHours() + 36) % 24) - 12;
  return offset === 0 ? "Etc/GMT" : offset > 0 ? `Etc/GMT-${offset}` : `Etc/GMT+${-offset}`;
}

t("the same on a member-scope daily window of $0.20 (each member's seat): no member over its $0.20, the refused calls name team:limit:seat-daily", async (ctx) => {
  const limits = [{ name: "seat-daily", metric: "spend", max: 0.2, window: "day", scope: "member" }];
  const { spent, reasons, members } = await replicasUntilRefused(ctx, { max_spend_per_period: null, limits, time_zone: noonZone(), cost_rates: RATES });
  const seats = await Promise.all(members.map(async (m) => (await ctx.api.get(`/users/${m}/usage`)).body.total_cost as number));
  const most = Math.max(...seats);
  assert.ok(most <= 0.2 + 1e-9, `every member within its $0.20 seat: the most spent $${most}`);
  assert.ok(spent >= 0.15 * members.length, `the seats were spent: $${spent} over ${members.length} members`);
  assert.equal(reasons, ["team:limit:seat-daily"], "every refused call named the member's seat window");
});

t("one process serving two members holds one slice of their team's cap: the second member's calls need no request of their own, and shutdown gives the rest back", async (ctx) => {
  const members = await subscribedMembers(ctx, ["a", "b"]);
  const teamId = await createTeam(ctx.api, { max_spend_per_period: 5, cost_rates: RATES }, members);
  const m = new Meter({ apiKey: ctx.apiKey, baseURL: ctx.stack.apiUrl, leases: true, leaseIdleMs: 600_000, flushIntervalMs: 200, logger: { warn: () => undefined } });
  for (const id of members) await m.guard(id, { model: "m" });
  const call = async (id: string) => (await m.reserve(id, { model: "m", input_tokens: 1000 })).commit({ input_tokens: 1000, output_tokens: 500 });
  await call(members[0]!);
  // The first member's request brought the team's slice; the second member's call spends from it at once.
  const held = reserveNow(m, members[1]!, { model: "m", input_tokens: 1000 });
  assert.ok(held, "the second member's call waited for a lease request");
  held.commit({ input_tokens: 1000, output_tokens: 500 });
  for (let i = 2; i < 20; i++) await call(members[i % 2]!);
  assert.ok(await m.shutdown({ timeoutMs: 20_000 }));
  await eventually(async () => (await ctx.api.get(`/teams/${teamId}/usage`)).body.total_cost === 20 * CALL_COST || null, 30_000, "the team's usage");
  // Given back: what is free of the team's cap is the cap less what the 20 calls spent, nothing held.
  const probe = await ctx.api.post(`/users/${members[0]}/leases`, { holder: "probe", need: 0, want: 0, team: { need: 0, want: 100 } });
  assert.is(probe.status, 200, JSON.stringify(probe.body));
  assert.is(probe.body.lease.team.added + probe.body.lease.team.remaining, 5 - 20 * CALL_COST, JSON.stringify(probe.body.lease.team));
});

/**
 * A team cap of 200 call estimates, in dollars or in tokens of "m": the first slice asked for
 * (100 of them, a replica's fast start) is half the cap. `slice` picks the slice of the answer's
 * team part, `spare` names the offer's field, `ask` is what another member's replica asks for,
 * `counted` checks the team's usage against the calls.
 */
const OFFERS = {
  "its team spend slice": {
    cap: 200 * 0.02,
    plan: (cap: number) => ({ max_spend_per_period: cap, cost_rates: RATES }),
    spare: "spare",
    slice: (team: any) => team,
    ask: (cap: number) => ({ need: 0.02, want: cap }),
    counted: (usage: any, calls: number) => Math.abs(usage.total_cost - calls * CALL_COST) < 1e-9,
    unit: 1e-6,
  },
  "its slice of the team's token cap of a model": {
    cap: 200 * 2_000,
    plan: (cap: number) => ({ max_spend_per_period: null, model_limits: { m: { max_tokens_per_period: cap } }, cost_rates: RATES }),
    spare: "spare_tokens",
    slice: (team: any) => team.tokens,
    ask: (cap: number) => ({ need: 0, want: 0, model: "m", need_tokens: 2_000, want_tokens: cap }),
    counted: (usage: any, calls: number) => usage.total_tokens === calls * 1_500,
    unit: 1,
  },
};

for (const [what, o] of Object.entries(OFFERS)) {
  t(`a replica that asked first offers what ${what} holds beyond a round trip's needs: the service takes back what is beyond its share for another member's replica`, async (ctx) => {
    const cap = o.cap;
    const [member] = await subscribedMembers(ctx, [`offer-${o.spare}`]);
    const teamId = await createTeam(ctx.api, o.plan(cap), [member!]);
    const [other] = await subscribedMembers(ctx, [`offer-${o.spare}-other`]);
    assert.is((await ctx.api.request("PUT", `/users/${other}/team`, { body: { team_id: teamId } })).status, 200);
    const proxy = await FaultProxy.start(ctx.stack.apiUrl);
    proxy.recording = /POST \/users\/[^/]+\/leases$/;
    const m = new Meter({ apiKey: ctx.apiKey, baseURL: proxy.apiUrl, leases: true, leaseIdleMs: 600_000, flushIntervalMs: 200, logger: { warn: () => undefined } });
    let calls = 0;
    const call = async () => {
      (await m.reserve(member!, { model: "m", input_tokens: 1000 })).commit({ input_tokens: 1000, output_tokens: 500 });
      calls++;
    };
    await call();
    const first = proxy.exchanges[0]!;
    assert.is(first.body.team[o.spare], undefined, "nothing to offer before a rate is measured");
    assert.ok(o.slice(first.answer.lease.team).added > cap / 3, `the first slice is more than a share: ${JSON.stringify(first.answer.lease.team)}`);
    // Another member's replica: a third of what is left.
    const askAsOther = async () => o.slice((await ctx.api.post(`/users/${other}/leases`, { holder: "other", need: 0, want: 0, ttl_ms: 60_000, team: o.ask(cap) })).body.lease.team);
    assert.ok((await askAsOther()).added > 0);
    const offered = (x: (typeof proxy.exchanges)[number]) => x.body.team?.[o.spare] > 0;
    while (calls < 50 && !proxy.exchanges.some(offered)) {
      await new Promise((done) => setTimeout(done, 100)); // the model call
      await call();
    }
    const offer = proxy.exchanges.find(offered);
    assert.ok(offer, `an offer was sent: ${JSON.stringify(proxy.exchanges.map((x) => x.body))}`);
    if (o.spare === "spare_tokens") assert.ok(offer!.body.team.model === "m" && Number.isInteger(offer!.body.team.spare_tokens), "whole tokens of the model");
    const slice = o.slice(offer!.answer.lease.team);
    assert.ok(slice.returned > 0 && slice.returned <= offer!.body.team[o.spare], JSON.stringify(offer));
    assert.ok(slice.granted - slice.spent <= (cap - slice.spent) / 3 + o.unit, "kept no more than its share of what is unsettled");
    assert.ok((await askAsOther()).added > 0, "what went back is the other replica's to be granted");
    assert.is(m.stats.lease_waits, 1, "no call waited after the first");
    assert.ok(await m.shutdown({ timeoutMs: 20_000 }));
    await proxy.close();
    await eventually(async () => o.counted((await ctx.api.get(`/teams/${teamId}/usage`)).body, calls) || null, 30_000, "every call counted once");
  });
}

t("an older service that refuses the team offer's field: the team slice keeps what it offered, and nothing is offered again for a while", async (ctx) => {
  const cap = 200 * 0.02;
  const [member] = await subscribedMembers(ctx, ["refused"]);
  const teamId = await createTeam(ctx.api, { max_spend_per_period: cap, cost_rates: RATES }, [member!]);
  const proxy = await FaultProxy.start(ctx.stack.apiUrl);
  const leases = /POST \/users\/[^/]+\/leases$/;
  proxy.recording = leases;
  const m = new Meter({ apiKey: ctx.apiKey, baseURL: proxy.apiUrl, leases: true, leaseIdleMs: 600_000, flushIntervalMs: 200, logger: { warn: () => undefined } });
  // The change marker read first: without it, the first poll of changes renews every lease, and the renewal would be the next request.
  await m.start();
  let calls = 0;
  const call = async () => {
    await new Promise((done) => setTimeout(done, 100)); // the model call
    (await m.reserve(member!, { model: "m", input_tokens: 1000 })).commit({ input_tokens: 1000, output_tokens: 500 });
    calls++;
  };
  await call();
  // The next lease request is the offer (the slice is far from its low-water mark): refused as a service without the field refuses it.
  proxy.inject(leases, { kind: "status", status: 422, body: { detail: "body/team/spare must NOT have additional properties" } });
  while (calls < 50 && proxy.exchanges.length < 2) await call();
  const refused = proxy.exchanges[1];
  assert.ok(refused && refused.body.team?.spare > 0, JSON.stringify(proxy.exchanges.map((x) => x.body)));
  // Ten calls a tenth of a second apart: an offer the service took nothing of is made again within 0.2 s.
  for (let i = 0; i < 10; i++) await call();
  assert.is(proxy.exchanges.slice(2).filter((x) => x.body.team?.spare > 0).length, 0, "nothing offered again");
  assert.is(m.stats.lease_waits, 1, "the calls spent what the refused request offered");
  assert.ok(await m.shutdown({ timeoutMs: 20_000 }));
  await proxy.close();
  await eventually(async () => Math.abs((await ctx.api.get(`/teams/${teamId}/usage`)).body.total_cost - calls * CALL_COST) < 1e-9 || null, 30_000, "every call counted once");
});

t("idle members are forgotten once their slices went back, a member with a cap of its own too, and so is the team's book; made again, a book spends only what it is granted", async (ctx) => {
  const members = await subscribedMembers(ctx, ["idle-a", "idle-b"]);
  const capped = `member-capped-${Date.now()}`;
  await ctx.api.post("/users", { external_user_id: capped });
  // $0.02 estimated a call, $0.015 spent: 6 calls fit in $0.10.
  const cap = 0.1;
  const cappedPlan = await createPlan(ctx.api, { max_spend_per_period: cap, cost_rates: RATES, pre_call_estimate: true, pre_call_buffer_tokens: 1000 });
  await subscribe(ctx.api, capped, cappedPlan, new Date(Date.now() - DAY), new Date(Date.now() + 20 * DAY));
  const teamId = await createTeam(ctx.api, { max_spend_per_period: 5, cost_rates: RATES }, [...members, capped]);
  // Idle long enough that the counts read right after calls are not raced by the sweep on a busy machine.
  const m = new Meter({ apiKey: ctx.apiKey, baseURL: ctx.stack.apiUrl, leases: true, leaseIdleMs: 2_000, flushIntervalMs: 200, logger: { warn: () => undefined } });
  const call = async (id: string) => (await m.reserve(id, { model: "m", input_tokens: 1000 })).commit({ input_tokens: 1000, output_tokens: 500 });
  for (const id of [...members, capped, capped, capped]) await call(id);
  assert.is(m.stats.leased_users, 3);
  assert.is(m.stats.leased_teams, 1);
  await eventually(() => (m.stats.leased_users === 0 && m.stats.leased_teams === 0) || null, 20_000, "every idle book forgotten");
  // Made again under the same holder: the holder's lease of the capped member's own cap holds what the
  // last book used ($0.045), which the new book must not take for room of its own.
  await call(capped);
  assert.is(m.stats.leased_users, 1);
  // Another holder takes what is left of the member's cap, in shares until nothing is.
  let probed = 0;
  for (let added = 1; added > 0; ) {
    const r = await ctx.api.post(`/users/${capped}/leases`, { holder: "probe", need: 0, want: cap });
    assert.is(r.status, 200, JSON.stringify(r.body));
    added = r.body.lease.added;
    probed = r.body.lease.granted;
  }
  assert.ok(probed > 0, "the other holder was granted the rest");
  for (;;) {
    try {
      await call(capped);
    } catch (err) {
      assert.instance(err, LimitExceededError);
      assert.is((err as LimitExceededError).result.gate_reason, "total_spend");
      break;
    }
  }
  assert.ok(await m.shutdown({ timeoutMs: 20_000 }));
  const spent = await eventually(async () => {
    const u = (await ctx.api.get(`/users/${capped}/usage`)).body.total_cost as number;
    return u >= 4 * CALL_COST - 1e-9 ? u : null;
  }, 30_000, "the capped member's usage");
  // What the member spent and what the other holder was granted stay within the cap.
  assert.ok(spent + probed <= cap + 1e-9, `$${spent} spent and $${probed} granted to another holder, of a cap of $${cap}`);
  await eventually(async () => Math.abs((await ctx.api.get(`/teams/${teamId}/usage`)).body.total_cost - spent - 2 * CALL_COST) < 1e-9 || null, 30_000, "the team's usage");
});

t("a member moved to another team: its calls count under the new team's cap, and once idle neither team's book stays, though the old one's slice cannot go back", async (ctx) => {
  const [member] = await subscribedMembers(ctx, ["moving"]);
  const from = await createTeam(ctx.api, { max_spend_per_period: 0.1, cost_rates: RATES }, [member!]);
  // $0.05: 3 calls fit ($0.02 estimated, $0.015 spent each).
  const to = await createTeam(ctx.api, { max_spend_per_period: 0.05, cost_rates: RATES }, []);
  // The old team's slice lapses within the test; 5 s, not 2, so that on a loaded machine the new
  // team's slice does not lapse between two calls while the service still counts it (its grace).
  const m = new Meter({ apiKey: ctx.apiKey, baseURL: ctx.stack.apiUrl, leases: true, leaseIdleMs: 1_000, leaseTtlMs: 5_000, flushIntervalMs: 200, logger: { warn: () => undefined } });
  const call = async () => (await m.reserve(member!, { model: "m", input_tokens: 1000 })).commit({ input_tokens: 1000, output_tokens: 500 });
  await call();
  await call();
  assert.is((await ctx.api.request("PUT", `/users/${member}/team`, { body: { team_id: to } })).status, 200);
  await m.refresh(member!);
  let calls = 0;
  let refused = "";
  for (;;) {
    try {
      await call();
      calls++;
    } catch (err) {
      assert.instance(err, LimitExceededError);
      assert.is((err as LimitExceededError).result.gate_reason, "team:total_spend");
      refused = String(err);
      break;
    }
  }
  assert.is(calls, 3, `${calls} calls under the new team's cap, then: ${refused}`);
  assert.is(m.stats.leased_teams, 2);
  // The old team's slice goes back through no member's lease (none of its members is served here): its book goes once the slice ended.
  await eventually(() => (m.stats.leased_users === 0 && m.stats.leased_teams === 0) || null, 20_000, "every idle book forgotten");
  assert.ok(await m.shutdown({ timeoutMs: 20_000 }));
  await eventually(async () => Math.abs((await ctx.api.get(`/teams/${to}/usage`)).body.total_cost - 3 * CALL_COST) < 1e-9 || null, 30_000, "the new team's usage");
  assert.ok(Math.abs((await ctx.api.get(`/teams/${from}/usage`)).body.total_cost - 2 * CALL_COST) < 1e-9, "the old team kept its 2 calls");
});

t("a new team period: the member's calls spend the whole team cap again, not what the last period's use left of it", async (ctx) => {
  const [member] = await subscribedMembers(ctx, ["periods"]);
  const teamId = `t-period-${Date.now()}`;
  assert.is((await ctx.api.post("/teams", { external_team_id: teamId, name: "Acme" })).status, 201);
  // $0.10 in periods of 10 s, the first ending 6 s from now (periods roll on from a subscription's dates).
  const end = Date.now() + 6_000;
  const plan = await createPlan(ctx.api, { max_spend_per_period: 0.1, cost_rates: RATES });
  const sub = await ctx.api.post(`/teams/${teamId}/subscription`, { plan_id: plan, period_start: new Date(end - 10_000).toISOString(), period_end: new Date(end).toISOString() });
  assert.is(sub.status, 200, JSON.stringify(sub.body));
  assert.is((await ctx.api.request("PUT", `/users/${member}/team`, { body: { team_id: teamId } })).status, 200);
  const m = new Meter({ apiKey: ctx.apiKey, baseURL: ctx.stack.apiUrl, leases: true, flushIntervalMs: 200, logger: { warn: () => undefined } });
  const call = async () => (await m.reserve(member!, { model: "m", input_tokens: 1000 })).commit({ input_tokens: 1000, output_tokens: 500 });
  const untilRefused = async () => {
    for (let calls = 0; ; calls++) {
      try {
        await call();
      } catch (err) {
        assert.instance(err, LimitExceededError);
        assert.is((err as LimitExceededError).result.gate_reason, "team:total_spend");
        return calls;
      }
    }
  };
  for (let i = 0; i < 4; i++) await call();
  assert.ok(Date.now() < end, "the first period's calls ran in it");
  while (Date.now() < end + 200) await new Promise((r) => setTimeout(r, 50));
  // $0.02 estimated a call, $0.015 spent: 6 calls fit in $0.10, whatever the last period spent.
  const calls = await untilRefused();
  assert.ok(await m.shutdown({ timeoutMs: 20_000 }));
  assert.is(calls, 6, `${calls} calls in the new period, where 4 ran in the last`);
  await eventually(async () => Math.abs((await ctx.api.get(`/teams/${teamId}/usage`)).body.total_cost - 6 * CALL_COST) < 1e-9 || null, 30_000, "the new period to count its 6 calls");
});

t("a call reserved in one team period and committed in the next gives its estimate back to the period it was taken from: the new period's team slice is spent no further than granted", async (ctx) => {
  const [member] = await subscribedMembers(ctx, ["straddling"]);
  const teamId = `t-straddling-${Date.now()}`;
  assert.is((await ctx.api.post("/teams", { external_team_id: teamId, name: "Acme" })).status, 201);
  // $0.20 in periods of 10 s, the first ending 5 s from now.
  const cap = 0.2;
  const end = Date.now() + 5_000;
  const plan = await createPlan(ctx.api, { max_spend_per_period: cap, cost_rates: RATES });
  assert.is((await ctx.api.post(`/teams/${teamId}/subscription`, { plan_id: plan, period_start: new Date(end - 10_000).toISOString(), period_end: new Date(end).toISOString() })).status, 200);
  assert.is((await ctx.api.request("PUT", `/users/${member}/team`, { body: { team_id: teamId } })).status, 200);
  const proxy = await FaultProxy.start(ctx.stack.apiUrl);
  proxy.recording = /POST \/users\/[^/]+\/leases$/;
  const m = new Meter({ apiKey: ctx.apiKey, baseURL: proxy.apiUrl, leases: true, flushIntervalMs: 200, logger: { warn: () => undefined } });
  await m.start();
  const CALL = { model: "m", input_tokens: 1000 };
  const USED = { input_tokens: 1000, output_tokens: 500 };
  const straddling = await m.reserve(member!, CALL);
  assert.ok(Date.now() < end, "reserved in the first period");
  while (Date.now() < end + 200) await new Promise((r) => setTimeout(r, 50));
  // Another holder takes most of the new period's team cap, so that this process's calls run out of their slice.
  const probe = async () => (await ctx.api.post(`/users/${member}/leases`, { holder: "probe", need: 0, want: 0, ttl_ms: 60_000, team: { need: 0, want: cap } })).body.lease.team;
  assert.ok((await probe()).added > 0);
  (await m.reserve(member!, CALL)).commit(USED);
  // The straddling call ends now: its event counts in the new period, its estimate goes back to the last one's slice.
  straddling.commit(USED);
  for (let i = 0; i < 4; i++) await probe();
  let calls = 2;
  for (; ; calls++) {
    try {
      (await m.reserve(member!, CALL)).commit(USED);
    } catch (err) {
      assert.is((err as LimitExceededError).result?.gate_reason, "team:total_spend", String(err));
      break;
    }
  }
  // What the service granted this process of the new period's team cap, before shutdown gives the rest back.
  const grants = proxy.exchanges.map((x) => x.answer.lease?.team).filter((t) => t && Date.parse(t.period_end) > end);
  const granted = Math.max(...grants.map((t) => t.granted));
  assert.ok(await m.shutdown({ timeoutMs: 20_000 }));
  await proxy.close();
  const spent = calls * CALL_COST;
  await eventually(async () => Math.abs((await ctx.api.get(`/teams/${teamId}/usage`)).body.total_cost - spent) < 1e-9 || null, 30_000, "the new period's calls counted");
  assert.ok(spent <= granted + 1e-9, `this process spent $${spent} of the new period's team cap where it was granted $${granted}`);
});

t("two members' first calls at once, each with a cap of its own: the second waits for the team's slice the first member's request asks for, and is not refused for the team's cap", async (ctx) => {
  const capped = await createPlan(ctx.api, { max_spend_per_period: 100, cost_rates: RATES, pre_call_estimate: true, pre_call_buffer_tokens: 1000 });
  const members = await Promise.all(
    ["first-a", "first-b"].map(async (name) => {
      const id = `member-${name}-${Date.now()}`;
      await ctx.api.post("/users", { external_user_id: id });
      await subscribe(ctx.api, id, capped, new Date(Date.now() - DAY), new Date(Date.now() + 20 * DAY));
      return id;
    }),
  );
  const [a, b] = members as [string, string];
  await createTeam(ctx.api, { max_spend_per_period: 1000, cost_rates: RATES }, members);
  const proxy = await FaultProxy.start(ctx.stack.apiUrl);
  const leasesOf = (id: string) => new RegExp(`^POST /users/${id}/leases$`);
  proxy.recording = /POST \/users\/[^/]+\/leases$/;
  // The first member's request carries the team's ask (it is sent first); it reaches the service
  // only once the second member's own request (its own cap, no team ask) has been answered.
  proxy.inject(leasesOf(a), { kind: "hold", until: () => eventually(async () => proxy.countAnswered(leasesOf(b)) > 0 || null, 30_000, "the second member's answer") });
  const m = new Meter({ apiKey: ctx.apiKey, baseURL: proxy.apiUrl, leases: true, leaseIdleMs: 600_000, flushIntervalMs: 200, logger: { warn: () => undefined } });
  // Both sessions loaded first, so that both first calls ask in the same turn.
  for (const id of members) await m.guard(id, { model: "m" });
  const call = async (id: string) => (await m.reserve(id, { model: "m", input_tokens: 1000 })).commit({ input_tokens: 1000, output_tokens: 500 });
  const settled = await Promise.allSettled([call(a), call(b)]);
  const asked = proxy.exchanges.map((x) => ({ user: x.key.includes(a) ? "a" : "b", team: x.body.team !== undefined }));
  assert.equal(asked.slice(0, 2), [{ user: "b", team: false }, { user: "a", team: true }], `the second member's request came back first, without the team's ask: ${JSON.stringify(asked)}`);
  assert.equal(settled.map((s) => s.status), ["fulfilled", "fulfilled"], `both calls ran: ${settled.map((s) => (s.status === "rejected" ? String(s.reason) : "ran")).join("; ")}`);
  assert.ok(await m.shutdown({ timeoutMs: 20_000 }));
  await proxy.close();
});

t("three members' first calls waiting for one answer that covers one of them: the others wait again and ask, and none is refused with the team's cap free", async (ctx) => {
  const members = await subscribedMembers(ctx, ["three-a", "three-b", "three-c"]);
  await createTeam(ctx.api, { max_spend_per_period: 0.2, cost_rates: RATES }, members);
  // A probe holds $0.134: $0.066 free, room for the three $0.02 estimates, while a grant is at
  // most a third of what is free (or one call's need), so one answer covers one call.
  const probe = await ctx.api.post(`/users/${members[0]}/leases`, { holder: "probe", need: 0, want: 0, ttl_ms: 60_000, team: { need: 0.134, want: 0.134 } });
  assert.is(probe.body.lease?.team?.added, 0.134, JSON.stringify(probe.body));
  const proxy = await FaultProxy.start(ctx.stack.apiUrl);
  const m = new Meter({ apiKey: ctx.apiKey, baseURL: proxy.apiUrl, leases: true, leaseIdleMs: 600_000, flushIntervalMs: 200, logger: { warn: () => undefined } });
  // Started: the change marker is known, so no first poll without one asks every slice again meanwhile.
  await m.start();
  for (const id of members) await m.guard(id, { model: "m" });
  // The first request (the team's ask) reaches the service once all three calls wait for it.
  proxy.inject(/^POST \/users\/[^/]+\/leases$/, { kind: "hold", until: () => eventually(async () => m.stats.lease_waits === 3 || null, 30_000, "all three calls waiting") });
  const call = async (id: string) => (await m.reserve(id, { model: "m", input_tokens: 1000 })).commit({ input_tokens: 1000, output_tokens: 500 });
  const settled = await Promise.allSettled(members.map(call));
  assert.equal(settled.map((s) => s.status), ["fulfilled", "fulfilled", "fulfilled"], `every call ran: ${settled.map((s) => (s.status === "rejected" ? String(s.reason) : "ran")).join("; ")}`);
  assert.ok(await m.shutdown({ timeoutMs: 20_000 }));
  await proxy.close();
});

t("a replica killed holding a slice of the team's cap: the slice returns to the other members' replicas after its expiry", async (ctx) => {
  const members = await subscribedMembers(ctx, ["dead", "alive"]);
  await createTeam(ctx.api, { max_spend_per_period: 5, cost_rates: RATES }, members);
  const holder = spawnReplica({ METER_API_KEY: ctx.apiKey, METER_BASE_URL: ctx.stack.apiUrl, LEASE_USER: members[0]!, LEASE_TTL_MS: String(TTL_MS), LEASE_MODE: "hold" });
  await holder.printed("held");
  // Asking for nothing grants nothing: the answer's `remaining` is what is free of the team's cap.
  const free = async () => {
    const r = await ctx.api.post(`/users/${members[1]}/leases`, { holder: "probe", need: 0, want: 0, team: { need: 0, want: 0 } });
    assert.is(r.status, 200, JSON.stringify(r.body));
    return r.body.lease.team.remaining as number;
  };
  assert.ok((await free()) < 5, "the replica holds a slice of the team's cap");
  holder.kill();
  // Nothing was spent: once the dead replica's slice lapsed, the whole cap is free again.
  await eventually(async () => (await free()) === 5 || null, 30_000, "the dead replica's slice to lapse");
});

t("a member whose own plan caps nothing keeps its team's slice under a call longer than the lease's lifetime: another replica is refused until it ends", async (ctx) => {
  const [first, second] = await subscribedMembers(ctx, ["long-a", "long-b"]);
  // $0.02: one call's estimate is the whole team cap.
  await createTeam(ctx.api, { max_spend_per_period: 0.02, cost_rates: RATES }, [first!, second!]);
  const replica = () => new Meter({ apiKey: ctx.apiKey, baseURL: ctx.stack.apiUrl, leases: true, leaseTtlMs: TTL_MS, leaseIdleMs: 400, logger: { warn: () => {} } });
  const [a, b] = [replica(), replica()];
  const CALL = { model: "m", input_tokens: 1000 };
  const USED = { input_tokens: 1000, output_tokens: 500 };
  let started!: () => void;
  let finish!: () => void;
  const began = new Promise<void>((r) => (started = r));
  const ends = new Promise<void>((r) => (finish = r));
  const long = a.call(first!, { ...CALL, usage: () => USED }, async () => {
    started();
    await ends;
    return "ok";
  });
  await began;
  // The team lease's lifetime and the service's grace pass twice while the call runs.
  await new Promise((r) => setTimeout(r, 2 * (TTL_MS + GRACE_MS)));
  let refused: unknown;
  try {
    await b.call(second!, { ...CALL, usage: () => USED }, () => "ran");
  } catch (err) {
    refused = err;
  }
  assert.is((refused as { result?: { gate_reason?: string } } | undefined)?.result?.gate_reason, "team:total_spend", "the second replica is refused: the running call's estimate is still held");
  finish();
  assert.is(await long, "ok");
  await a.shutdown();
  await b.shutdown();
});

t.run();
