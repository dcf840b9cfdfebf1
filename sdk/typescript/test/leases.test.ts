import { suite } from "uvu";
import * as assert from "uvu/assert";
import { LimitExceededError, Meter, type MeterOptions, type UsageEvent } from "../src/index.ts";
import { CALL_COST, CALL_ESTIMATE, CALL_TOKENS, CALL_TOKENS_ESTIMATE, cappedUser, cappedUserPlan, windowedUser } from "../../../bench/lease-run.ts";
import { eventually } from "../../../test/support/eventually.ts";
import { createPlan, createTeamOnPlan, memoryLogger, type ProductCtx, rejects, startWithProduct, stopAll, subscribe, usage } from "./support/fixtures.ts";
import { FaultProxy } from "./support/proxy.ts";
import { commitNow, reserveNow } from "../src/internal.ts";

interface Ctx extends ProductCtx {
  proxies: FaultProxy[];
}
const t = suite<Ctx>("sdk: leases: true in one process, and with the lease route failing");

t.before(async (ctx) => {
  await startWithProduct(ctx, "sdk leases");
  ctx.proxies = [];
});
t.after(async (ctx) => {
  await stopAll(ctx.stack, [], ctx.proxies);
});

async function setup(ctx: Ctx, opts: MeterOptions = {}) {
  const proxy = await FaultProxy.start(ctx.stack.apiUrl);
  ctx.proxies.push(proxy);
  const m = new Meter({ apiKey: ctx.apiKey, baseURL: proxy.apiUrl, logger: memoryLogger(), leases: true, ...opts });
  return { proxy, m };
}

const CALL = { model: "m", input_tokens: 1000 };
const USED = { input_tokens: 1000, output_tokens: 500 };

/** Calls until one is hard-gated (for `reason`); the number of calls that ran. */
async function callUntilRefused(m: Meter, user: string, reason: string): Promise<number> {
  for (let calls = 0; ; calls++) {
    try {
      await m.call(user, { ...CALL, usage: () => USED }, () => "ok");
    } catch (err) {
      assert.instance(err, LimitExceededError);
      assert.is((err as LimitExceededError).result.gate_reason, reason);
      return calls;
    }
  }
}

t("a lease release the service does not answer takes at most half of shutdown's timeout: the events are delivered within it", async (ctx) => {
  const user = await cappedUser(ctx.api, 20 * CALL_ESTIMATE);
  // A request timeout far past the release's delay: a shutdown that waited on the release's own timeout
  // would return only once the release was answered.
  const { proxy, m } = await setup(ctx, { requestTimeoutMs: 600_000 });
  for (let i = 0; i < 3; i++) await m.call(user, { ...CALL, usage: () => USED }, () => "ok");
  proxy.inject(/\/release$/, { kind: "delay", ms: 30_000 }, 1);
  assert.is(await m.shutdown({ timeoutMs: 4_000 }), true, "the events delivered");
  assert.is(proxy.count(/\/release$/), 1, "the release was sent");
  assert.is(proxy.countAnswered(/\/release$/), 0, "shutdown returned before the release was answered");
  await eventually(async () => Math.abs((await usage(ctx.api, user)).total_cost - 3 * CALL_COST) < 1e-6);
});

t("calls spend from the lease until it cannot cover one; events settle; shutdown gives the rest back", async (ctx) => {
  const cap = 20 * CALL_ESTIMATE;
  const user = await cappedUser(ctx.api, cap);
  const { proxy, m } = await setup(ctx);
  const calls = await callUntilRefused(m, user, "total_spend");
  assert.ok(calls * CALL_COST <= cap, `${calls} calls within the cap`);
  assert.ok(proxy.count(/POST \/users\/[^/]+\/leases$/) < calls, "fewer lease requests than calls");
  await m.shutdown();
  assert.is(proxy.count(/\/release$/), 1);
  const u = await usage(ctx.api, user);
  assert.ok(Math.abs(u.total_cost - calls * CALL_COST) < 1e-6);
  // Nothing is held any more: another holder is offered the whole rest (half of it, alone).
  const probe = await ctx.api.post(`/users/${user}/leases`, { holder: "probe", need: 0, want: cap });
  assert.ok(Math.abs(probe.body.lease.added - (cap - u.total_cost) / 2) < 1e-6, JSON.stringify(probe.body));
});

t("a model's token cap: two replicas spend their token slices until refused, never past the cap together", async (ctx) => {
  const cap = 20 * CALL_TOKENS_ESTIMATE;
  const user = await cappedUser(ctx.api, null, cap);
  const replicas = [await setup(ctx), await setup(ctx)];
  const calls = await Promise.all(replicas.map(({ m }) => callUntilRefused(m, user, "model_limit:m")));
  for (const { m } of replicas) await m.shutdown();
  const u = await usage(ctx.api, user);
  assert.is(u.total_tokens, (calls[0]! + calls[1]!) * CALL_TOKENS);
  assert.ok(u.total_tokens <= cap, `${u.total_tokens} tokens of a cap of ${cap}`);
  assert.ok(calls[0]! > 0 && calls[1]! > 0, `both replicas were served: ${calls.join(", ")}`);
});

t("reserveNow: a call the lease covers is held at once; one that needs a lease request waits for reserve()", async (ctx) => {
  const user = await cappedUser(ctx.api, 20 * CALL_ESTIMATE);
  const { proxy, m } = await setup(ctx);
  await m.guard(user, { model: "m" }); // loads the view; takes no lease
  assert.is(reserveNow(m, user, CALL), undefined, "no lease yet: the request is reserve()'s to wait for");
  assert.is(proxy.count(/POST \/users\/[^/]+\/leases$/), 0, "reserveNow() asks the service nothing");
  assert.is(m.stats.lease_waits, 0);
  commitNow(await m.reserve(user, CALL), USED);
  const asked = proxy.count(/POST \/users\/[^/]+\/leases$/);
  assert.ok(asked >= 1);
  assert.is(m.stats.lease_waits, 1, "the first call waited for the first slice");
  const r = reserveNow(m, user, CALL);
  assert.ok(r, "the lease covers the next call: held in the same tick");
  commitNow(r!, USED);
  commitNow(await m.reserve(user, CALL), USED);
  assert.is(proxy.count(/POST \/users\/[^/]+\/leases$/), asked);
  assert.is(m.stats.lease_waits, 1, "calls the slice covered waited for nothing");
  await m.shutdown();
  assert.ok(Math.abs((await usage(ctx.api, user)).total_cost - 3 * CALL_COST) < 1e-6);
});

// Small enough that the first slice asked for ($250) is more than half the cap; large enough
// that half of it is many round trips of these calls, even at a loaded machine's.
const OFFER_CAP = 200 * CALL_ESTIMATE;
const LEASES = /POST \/users\/[^/]+\/leases$/;
const near = (a: number, b: number, msg: string) => assert.ok(Math.abs(a - b) < 1e-6, `${msg}: ${a} != ${b}`);

/**
 * A replica that asked first (granted half the cap), then another holder (granted a third of
 * the rest), and calls a tenth of a second apart from the first: a slow spend rate, so most
 * of its slice is more than a round trip needs. The proxy records the lease requests.
 */
async function firstOfTwo(ctx: Ctx) {
  const user = await cappedUser(ctx.api, OFFER_CAP);
  const { proxy, m } = await setup(ctx);
  proxy.recording = LEASES;
  await m.call(user, { ...CALL, usage: () => USED }, () => "ok");
  const askAsOther = async () => (await ctx.api.post(`/users/${user}/leases`, { holder: "other", need: 1, want: OFFER_CAP, ttl_ms: 60_000 })).body.lease;
  const r = {
    proxy,
    m,
    calls: 1,
    other: await askAsOther(),
    askAsOther,
    async call() {
      await new Promise((done) => setTimeout(done, 100)); // the model call
      await m.call(user, { ...CALL, usage: () => USED }, () => "ok");
      r.calls++;
    },
    async close() {
      await m.shutdown();
      near((await usage(ctx.api, user)).total_cost, r.calls * CALL_COST, "every call counted once");
    },
  };
  return r;
}

t("a replica that asked first offers what it holds beyond a round trip's needs: the service takes back what is beyond its share for the replica that came after", async (ctx) => {
  const r = await firstOfTwo(ctx);
  const first = r.proxy.exchanges[0]!;
  assert.is(first.body.spare, undefined, "nothing to offer before a rate is measured");
  near(first.answer.lease.added, OFFER_CAP / 2, "alone: half the cap");
  near(r.other.added, OFFER_CAP / 6, "the other holder: a third of what is left");
  while (r.calls < 50 && !r.proxy.exchanges.some((x) => x.body.spare > 0)) await r.call();
  const offer = r.proxy.exchanges.find((x) => x.body.spare > 0);
  assert.ok(offer, "an offer was sent");
  const { lease } = offer!.answer;
  assert.ok(lease.returned > 0 && lease.returned <= offer!.body.spare, JSON.stringify(offer));
  assert.ok(lease.granted - lease.spent <= (OFFER_CAP - lease.spent) / 3 + 1e-6, "kept no more than its share of what is unsettled");
  assert.ok((await r.askAsOther()).added > 0, "what went back is the other holder's to be granted");
  assert.is(r.m.stats.lease_waits, 1, "no call waited after the first");
  await r.close();
});

t("an older service that refuses the offer's field: the slice keeps what it offered, and nothing is offered again for a while", async (ctx) => {
  const r = await firstOfTwo(ctx);
  // The next lease request is the offer (the slice is far from its low-water mark): refused as a service without the field refuses it.
  r.proxy.inject(LEASES, { kind: "status", status: 422, body: { detail: "body/spare must NOT have additional properties" } });
  while (r.calls < 50 && r.proxy.exchanges.length < 2) await r.call();
  const refused = r.proxy.exchanges[1];
  assert.ok(refused && refused.body.spare > 0, JSON.stringify(r.proxy.exchanges));
  // Ten calls a tenth of a second apart: an offer the service took nothing of is made again within 0.2 s.
  for (let i = 0; i < 10; i++) await r.call();
  assert.is(r.proxy.exchanges.slice(2).filter((x) => x.body.spare > 0).length, 0, "nothing offered again");
  assert.is(r.m.stats.lease_waits, 1, "the calls spent what the refused request offered");
  await r.close();
});

t("a lease left unused for leaseIdleMs is given back without shutdown", async (ctx) => {
  const user = await cappedUser(ctx.api, 100);
  const { proxy, m } = await setup(ctx, { leaseIdleMs: 200 });
  await m.call(user, { ...CALL, usage: () => USED }, () => "ok");
  await eventually(() => proxy.count(/\/release$/) === 1, 10_000, "the idle lease given back");
  await m.shutdown();
  assert.is(proxy.count(/\/release$/), 1, "nothing left to give back at shutdown");
});

t("a user idle for leaseIdleMs is forgotten once its lease is given back; its next calls lease under another holder id, within the cap", async (ctx) => {
  const cap = 6 * CALL_ESTIMATE;
  const user = await cappedUser(ctx.api, cap);
  // Idle long enough that the counts read right after calls are not raced by the sweep on a busy machine.
  const { proxy, m } = await setup(ctx, { leaseIdleMs: 2_000 });
  const events: UsageEvent[] = [];
  m.onUsage((e) => events.push(e));
  await m.call(user, { ...CALL, usage: () => USED }, () => "ok");
  assert.is(m.stats.leased_users, 1);
  await eventually(() => m.stats.leased_users === 0, 10_000, "the idle user's book forgotten");
  assert.is(proxy.count(/\/release$/), 1, "its lease given back before");
  const calls = await callUntilRefused(m, user, "total_spend");
  assert.is(m.stats.leased_users, 1);
  const ids = [...new Set(events.map((e) => e.lease_id))];
  assert.is(ids.length, 2, `one lease id before it was forgotten, another after: ${ids.join(", ")}`);
  await m.shutdown();
  const total = (await usage(ctx.api, user)).total_cost;
  assert.ok(Math.abs(total - (1 + calls) * CALL_COST) < 1e-6, `${total} spent in ${1 + calls} calls`);
  // Every call whose estimate fitted ran, and none past the cap.
  assert.ok(total <= cap && cap - total < CALL_ESTIMATE, `${total} spent of a cap of ${cap}`);
});

t('service unreachable: "slice" spends only what the lease holds, "open" lets calls pass', async (ctx) => {
  const user = await cappedUser(ctx.api, 100);
  const slice = await setup(ctx, { leaseFallback: "slice" });
  slice.proxy.inject(/\/leases$/, { kind: "status", status: 503 }, 100);
  await rejects(() => slice.m.call(user, { ...CALL, usage: () => USED }, () => "ok"), LimitExceededError);
  await slice.m.shutdown();
  const open = await setup(ctx, { leaseFallback: "open" });
  open.proxy.inject(/\/leases$/, { kind: "status", status: 503 }, 1);
  const events: UsageEvent[] = [];
  open.m.onUsage((e) => events.push(e));
  assert.is(await open.m.call(user, { ...CALL, usage: () => USED }, () => "ran"), "ran");
  assert.is(events[0]!.lease_id, undefined, "failed open: spent from no lease");
  // Once the service answers again, calls spend from a lease again.
  await eventually(async () => {
    await open.m.call(user, { ...CALL, usage: () => USED }, () => "ran");
    return events.at(-1)!.lease_id !== undefined;
  }, 20_000, "calls leased again after the service recovered");
  await open.m.shutdown();
  assert.ok(Math.abs((await usage(ctx.api, user)).total_cost - events.length * CALL_COST) < 1e-6);
  assert.throws(() => new Meter({ apiKey: "k", baseURL: "http://x", leases: true, leaseFallback: "nope" as "open" }), /leaseFallback/);
});

const LEASE_REQUEST = /POST \/users\/[^/]+\/leases$/;
// Tests that wait for 100 calls to be counted deliver often: at the default 5 s, a thousand calls
// more ran (and were ingested) before the first delivery.
const SETTLING: MeterOptions = { flushIntervalMs: 200 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `workers` loops of calls, each call taking `callMs` (the model call), until `done()`. A call
 * the lease cannot cover at once (reserveNow() gives nothing: it would wait for a lease
 * request) is counted as waited while `counting()`, then reserved the usual way.
 */
async function spend(m: Meter, user: string, workers: number, callMs: number, done: () => boolean, counting: () => boolean) {
  const seen = { calls: 0, waited: 0 };
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (!done()) {
        let r = reserveNow(m, user, CALL);
        if (!r) {
          if (counting()) seen.waited++;
          r = await m.reserve(user, CALL);
        }
        await sleep(callMs);
        commitNow(r, USED);
        seen.calls++;
      }
    }),
  );
  return seen;
}

/** No call counted waited for a lease request, and once shut down the service counted every call once. */
async function noneWaited(ctx: Ctx, m: Meter, user: string, seen: { calls: number; waited: number }, counted: string) {
  assert.is(seen.waited, 0, `${counted} that waited for a lease request, of ${seen.calls}`);
  await m.shutdown();
  assert.ok(Math.abs((await usage(ctx.api, user)).total_cost - seen.calls * CALL_COST) < 1e-6);
}

t("a replica whose slice runs low asks for the next one in the background: its next calls do not wait", async (ctx) => {
  const user = await cappedUser(ctx.api, 10_000_000);
  const { proxy, m } = await setup(ctx, SETTLING);
  // 5 concurrent calls at a time; first the replica learns its spend rate (lease requests answer at once).
  let slow = false;
  let answeredBefore = 0;
  const run = spend(m, user, 5, 20, () => slow && proxy.countAnswered(LEASE_REQUEST) >= answeredBefore + 2, () => slow);
  await eventually(async () => (await usage(ctx.api, user)).total_cost >= 100 * CALL_COST, 30_000, "100 calls settled");
  // From now on every lease request takes half a second.
  proxy.inject(LEASE_REQUEST, { kind: "delay", ms: 500 }, 1_000);
  answeredBefore = proxy.count(LEASE_REQUEST);
  slow = true;
  await noneWaited(ctx, m, user, await run, "calls");
});

// Every lease request is slow from the start: no spend rate is known when the first slice is
// sized, only the 50 calls waiting for it. 8 ms calls with requests held 700 ms: the first slice
// must cover more than 90 rounds of the calls in flight.
for (const { title, callMs, delayMs, answered } of [
  { title: "a replica's first slice covers its calls in flight until the next slow lease request answers", callMs: 100, delayMs: 500, answered: 4 },
  { title: "calls as short as 8 ms: the first slice covers what the calls in flight spend until the next slow lease request answers", callMs: 8, delayMs: 700, answered: 3 },
]) {
  t(title, async (ctx) => {
    const user = await cappedUser(ctx.api, 10_000_000);
    const { proxy, m } = await setup(ctx);
    // Changes made before start() (this user's subscription) renew no lease during the run.
    await m.start();
    proxy.inject(LEASE_REQUEST, { kind: "delay", ms: delayMs }, 1_000);
    const granted = () => proxy.countAnswered(LEASE_REQUEST) >= 1;
    const seen = await spend(m, user, 50, callMs, () => proxy.countAnswered(LEASE_REQUEST) >= answered, granted);
    await noneWaited(ctx, m, user, seen, "calls after the first grant");
  });
}

t("a call reserved in one period and committed in the next gives its estimate back to the period it was taken from: the new period's slice is spent no further than granted", async (ctx) => {
  const cap = 10 * CALL_ESTIMATE;
  const planId = await createPlan(ctx.api, { max_spend_per_period: cap, cost_rates: { m: { input: 1, output: 1 } }, pre_call_estimate: true, pre_call_buffer_tokens: 1000 });
  const user = `u-period-${Date.now()}`;
  assert.is((await ctx.api.post("/users", { external_user_id: user })).status, 201);
  // Periods of 10 s, the first ending 5 s from now (periods roll on from a subscription's dates).
  const end = Date.now() + 5_000;
  await subscribe(ctx.api, user, planId, new Date(end - 10_000), new Date(end));
  const { proxy, m } = await setup(ctx, { flushIntervalMs: 200 });
  proxy.recording = /POST \/users\/[^/]+\/leases$/;
  await m.start();
  const straddling = await m.reserve(user, CALL);
  assert.ok(Date.now() < end, "reserved in the first period");
  while (Date.now() < end + 200) await new Promise((r) => setTimeout(r, 50));
  // Another holder takes most of the new period's cap, so that this process's calls run out of their slice.
  const probe = async () => (await ctx.api.post(`/users/${user}/leases`, { holder: "probe", need: 0, want: cap, ttl_ms: 60_000 })).body.lease;
  assert.ok((await probe()).added > 0);
  await m.call(user, { ...CALL, usage: () => USED }, () => "ok");
  // The straddling call ends now: its event counts in the new period, its estimate goes back to the last one's slice.
  straddling.commit(USED);
  for (let i = 0; i < 4; i++) await probe();
  const calls = await callUntilRefused(m, user, "total_spend");
  // What the service granted this process in the new period, before shutdown gives the rest back.
  const grants = proxy.exchanges.map((x) => x.answer.lease).filter((l) => l && Date.parse(l.period_end) > end);
  const granted = Math.max(...grants.map((l) => l.granted));
  assert.ok(await m.shutdown({ timeoutMs: 20_000 }));
  const spent = (2 + calls) * CALL_COST;
  await eventually(async () => Math.abs((await usage(ctx.api, user)).total_cost - spent) < 1e-6 || null, 30_000, "the new period's calls counted");
  assert.ok(spent <= granted + 1e-9, `this process spent $${spent} of the new period where it was granted $${granted}`);
});

t("a lease request held for a second delays no call while the slice lasts", async (ctx) => {
  const user = await cappedUser(ctx.api, 10_000_000);
  const { proxy, m } = await setup(ctx, SETTLING);
  let held = false;
  let seenBefore = 0;
  const run = spend(m, user, 1, 10, () => held && proxy.countAnswered(LEASE_REQUEST) > seenBefore, () => held);
  await eventually(async () => (await usage(ctx.api, user)).total_cost >= 100 * CALL_COST, 30_000, "100 calls settled");
  // The next lease request is held a second on its way, while requests so far answered at once.
  proxy.inject(LEASE_REQUEST, { kind: "delay", ms: 1_000 });
  seenBefore = proxy.count(LEASE_REQUEST);
  held = true;
  const seen = await run;
  assert.is(seen.waited, 0, `calls that waited for a lease request, of ${seen.calls}`);
  await m.shutdown();
});

/**
 * Calls before and after changes of `planId`'s period spend cap (the user's plan, or its team's):
 * a raised cap keeps the slice held spendable while its renewal is held a second on its way
 * (`renewal` checks what the renewal asked); a lowered cap, below what the slice was granted
 * under, makes calls wait for a slice granted under it; they are refused for `reason`, and the
 * cap holds.
 */
async function capChanged(ctx: Ctx, planId: string, user: string, reason: string, renewal: (body: any) => void = () => undefined) {
  const { proxy, m } = await setup(ctx);
  proxy.recording = LEASE_REQUEST;
  await m.start();
  for (let i = 0; i < 5; i++) commitNow(await m.reserve(user, CALL), USED);
  await eventually(() => proxy.countAnswered(LEASE_REQUEST) === proxy.count(LEASE_REQUEST), 10_000, "no lease request on its way");
  const asked = proxy.count(LEASE_REQUEST);
  proxy.inject(LEASE_REQUEST, { kind: "delay", ms: 1_000 });
  assert.is((await ctx.api.patch(`/config/plans/${planId}`, { max_spend_per_period: 2_000_000 })).status, 200);
  await m.refresh(user);
  const held = 8;
  for (let i = 0; i < held; i++) {
    const r = reserveNow(m, user, CALL);
    assert.ok(r, `call ${i} after the change waited for the lease request`);
    commitNow(r, USED);
  }
  await eventually(() => proxy.count(LEASE_REQUEST) === asked + 1, 10_000, "the lease renewed in the background");
  assert.is(proxy.countAnswered(LEASE_REQUEST), asked, "the calls ran before the renewal answered");
  await eventually(() => proxy.countAnswered(LEASE_REQUEST) > asked, 10_000, "the renewal answered");
  renewal(proxy.exchanges[asked]!.body);
  const cap = (5 + held) * CALL_COST + 10 * CALL_ESTIMATE;
  assert.is((await ctx.api.patch(`/config/plans/${planId}`, { max_spend_per_period: cap })).status, 200);
  await m.refresh(user);
  assert.is(reserveNow(m, user, CALL), undefined, "no call spends a slice granted under a higher cap");
  await callUntilRefused(m, user, reason);
  await m.shutdown();
  assert.ok((await usage(ctx.api, user)).total_cost <= cap + 1e-6, "the lowered cap holds");
}

t("after a plan change calls keep spending from the slice still valid under the new caps while the lease is renewed", async (ctx) => {
  const { userId: user, planId } = await cappedUserPlan(ctx.api, 1_000_000);
  await capChanged(ctx, planId, user, "total_spend");
});

t("after a change of the team plan a member's calls keep spending the team's slice still valid under it; below a lowered team cap they wait for a slice granted under it", async (ctx) => {
  // The member's own plan caps nothing: only the team's slice covers its calls.
  const user = await cappedUser(ctx.api, null);
  const { planId } = await createTeamOnPlan(ctx.api, { max_spend_per_period: 1_000_000, cost_rates: { m: { input: 1, output: 1 } } }, [user]);
  await capChanged(ctx, planId, user, "team:total_spend", (body) => assert.ok(body.team?.want > 0, `the renewal asks for the team's slice under the new team plan: ${JSON.stringify(body)}`));
});

t("a plan change while the first lease request is on its way: the call waiting for it waits for the grant asked under the new caps", async (ctx) => {
  const { userId: user, planId } = await cappedUserPlan(ctx.api, 10_000_000);
  const { proxy, m } = await setup(ctx);
  await m.start();
  // The first lease request reaches the service only once the plan changed and this process took the change in.
  let changed = 0;
  proxy.inject(LEASE_REQUEST, {
    kind: "hold",
    until: async () => {
      changed = (await ctx.api.patch(`/config/plans/${planId}`, { max_spend_per_period: 20_000_000 })).status;
      await m.refresh(user);
    },
  });
  const r = await m.reserve(user, CALL);
  assert.is(changed, 200);
  assert.is(proxy.countAnswered(LEASE_REQUEST), 2, "asked once more, under the new caps");
  commitNow(r, USED);
  await m.shutdown();
  assert.ok(Math.abs((await usage(ctx.api, user)).total_cost - CALL_COST) < 1e-6);
});

t("a reload while the first lease request is on its way: the slice it got serves the call, though the cap has too little left to grant its need again", async (ctx) => {
  // $3: the first request is granted the call's $2 estimate, and $1 is left.
  const cap = 1.5 * CALL_ESTIMATE;
  const user = await cappedUser(ctx.api, cap);
  const { proxy, m } = await setup(ctx);
  await m.guard(user, { model: "m" }); // loads the view
  // The user's view is read again (a change notice, refresh()) while the grant is on its way: it is
  // asked again under the caps now in force, and the service, with $1 left, grants nothing more.
  proxy.recording = LEASE_REQUEST;
  proxy.inject(LEASE_REQUEST, { kind: "hold", until: () => m.refresh(user) });
  const r = await m.reserve(user, CALL);
  await eventually(() => proxy.exchanges.length === 2, 10_000, "both answers passed on");
  assert.equal(
    proxy.exchanges.map((x) => x.answer.lease.added),
    [CALL_ESTIMATE, 0],
    "granted the estimate, then asked again under the caps in force and refused",
  );
  commitNow(r, USED);
  await m.shutdown();
  assert.is((await usage(ctx.api, user)).total_cost, CALL_COST);
});

/** A client whose lease request was granted but whose answer was lost, so that a reserve was refused. */
async function lostGrant(ctx: Ctx) {
  const cap = 20 * CALL_ESTIMATE;
  const user = await cappedUser(ctx.api, cap);
  const { proxy, m } = await setup(ctx);
  await m.guard(user, { model: "m" }); // loads the view
  proxy.inject(LEASE_REQUEST, { kind: "lose" });
  await rejects(() => m.reserve(user, CALL), LimitExceededError);
  return { cap, user, m };
}

t("a call that needs the team's slice while it is being given back waits for the release: the grant it gets is not overwritten by it, and the team cap holds", async (ctx) => {
  // The member's own plan caps nothing: its calls spend the team's slice, which this process holds under its own holder id.
  const cap = 20 * CALL_ESTIMATE;
  const user = await cappedUser(ctx.api, null);
  const { teamId } = await createTeamOnPlan(ctx.api, { max_spend_per_period: cap, cost_rates: { m: { input: 1, output: 1 } } }, [user]);
  const { proxy, m } = await setup(ctx, { leaseIdleMs: 300 });
  await m.start();
  commitNow(await m.reserve(user, CALL), USED);
  const RELEASE = /POST \/users\/[^/]+\/leases\/[^/]+\/release$/;
  // The idle slice's release is held on its way until the next call's lease request was answered
  // (the order in which the service would see them if the request did not wait), or a moment after
  // that call began to wait for the release.
  const held = () => {
    const asked = proxy.count(LEASE_REQUEST);
    const waits = m.stats.lease_waits ?? 0;
    const answered = eventually(() => proxy.countAnswered(LEASE_REQUEST) > asked, 60_000, "the next lease request answered");
    const waited = eventually(() => (m.stats.lease_waits ?? 0) > waits, 60_000, "the next call waiting").then(() => sleep(500));
    return Promise.race([answered, waited]);
  };
  proxy.inject(RELEASE, { kind: "hold", until: held });
  await eventually(() => proxy.count(RELEASE) === 1, 10_000, "the idle team slice given back");
  commitNow(await m.reserve(user, CALL), USED);
  await eventually(() => proxy.countAnswered(RELEASE) === 1, 10_000, "the release answered");
  // Another holder takes all the service counts as free of the team's cap; the calls then spend what this process holds.
  const probe = await ctx.api.post(`/users/${user}/leases`, { holder: "probe", need: 0, want: 0, ttl_ms: 60_000, team: { need: 0, want: cap } });
  assert.is(probe.status, 200, JSON.stringify(probe.body));
  const taken = probe.body.lease.team.added as number;
  await callUntilRefused(m, user, "team:total_spend");
  await m.shutdown();
  const spent = (await ctx.api.get(`/teams/${teamId}/usage`)).body.total_cost as number;
  assert.ok(spent + taken <= cap + 1e-6, `the team spent $${spent} and another holder was granted $${taken} of its $${cap} cap`);
});

t("a slice granted while its answer was lost is spent once the service answers again, even when nothing more is left", async (ctx) => {
  const { cap, user, m } = await lostGrant(ctx);
  const lost = await ctx.api.get(`/users/${user}/usage`);
  assert.is(lost.body.total_cost, 0);
  // Another holder takes everything the lost slice left.
  const rest = await ctx.api.post(`/users/${user}/leases`, { holder: "other", need: cap / 2, want: cap });
  assert.is(rest.body.lease.added, cap / 2, JSON.stringify(rest.body));
  // Nothing is left to grant; the slice granted with the lost answer is this replica's to spend.
  const calls = await callUntilRefused(m, user, "total_spend");
  // $20: calls of $1.50 while the $2 estimate of the next one fits.
  assert.is(calls, Math.floor((cap / 2 - CALL_ESTIMATE) / CALL_COST) + 1);
  await m.shutdown();
});

t("a Meter not started: its first change poll, with no marker to say what changed, asks no lease again for a view that did not change", async (ctx) => {
  // A cap of 1,000 calls: the first slice covers the test's calls, and nothing is asked ahead.
  const user = await cappedUser(ctx.api, 1000 * CALL_ESTIMATE);
  const proxy = await FaultProxy.start(ctx.stack.apiUrl);
  ctx.proxies.push(proxy);
  let called!: () => void;
  const firstCall = new Promise<void>((r) => (called = r));
  // The first poll (no marker yet) reaches the service once the user's view and lease are held.
  proxy.inject(/^GET \/config\/changes$/, { kind: "hold", until: () => firstCall });
  proxy.recording = LEASE_REQUEST;
  const m = new Meter({ apiKey: ctx.apiKey, baseURL: proxy.apiUrl, logger: memoryLogger(), leases: true, flushIntervalMs: 200 });
  await m.call(user, { ...CALL, usage: () => USED }, () => "ok");
  called();
  // Every view is read again after that poll: once it is, calls go on.
  await eventually(() => (proxy.countAnswered(/^GET \/config\/changes/) >= 1 && proxy.countAnswered(/^GET \/users\/[^/]+\/session$/) >= 2) || null, 20_000, "the first poll and the view read again");
  for (let i = 0; i < 3; i++) await m.call(user, { ...CALL, usage: () => USED }, () => "ok");
  assert.ok(await m.shutdown());
  // Requests that ask for something (one offering back what the slice holds beyond its needs asks nothing).
  const asks = proxy.exchanges.filter((x) => x.body.want > 0);
  assert.is(asks.length, 1, `lease requests: ${JSON.stringify(proxy.exchanges.map((x) => x.body))}`);
});

t("a Meter not started: a cap lowered before its first change poll is met by a slice asked under it, though no marker said what changed", async (ctx) => {
  const { userId: user, planId } = await cappedUserPlan(ctx.api, 1000 * CALL_ESTIMATE);
  const proxy = await FaultProxy.start(ctx.stack.apiUrl);
  ctx.proxies.push(proxy);
  let changed!: () => void;
  const capLowered = new Promise<void>((r) => (changed = r));
  proxy.inject(/^GET \/config\/changes$/, { kind: "hold", until: () => capLowered });
  const m = new Meter({ apiKey: ctx.apiKey, baseURL: proxy.apiUrl, logger: memoryLogger(), leases: true, flushIntervalMs: 200 });
  await m.call(user, { ...CALL, usage: () => USED }, () => "ok");
  // Below what the slice was granted under ($2,000), above what was spent.
  assert.is((await ctx.api.patch(`/config/plans/${planId}`, { max_spend_per_period: 100 })).status, 200);
  changed();
  await eventually(() => (proxy.countAnswered(/^GET \/config\/changes/) >= 1 && proxy.countAnswered(/^GET \/users\/[^/]+\/session$/) >= 2) || null, 20_000, "the first poll and the view read again");
  assert.is(reserveNow(m, user, CALL), undefined, "no call spends a slice granted under a higher cap");
  await callUntilRefused(m, user, "total_spend");
  assert.ok(await m.shutdown());
  assert.ok((await usage(ctx.api, user)).total_cost <= 100 + 1e-6, "the lowered cap holds");
});

t("a slice granted while its answer was lost is given back at shutdown", async (ctx) => {
  const { cap, user, m } = await lostGrant(ctx);
  await m.shutdown();
  // Nothing is held any more: another holder may take the whole cap.
  const all = await ctx.api.post(`/users/${user}/leases`, { holder: "other", need: cap, want: cap });
  assert.is(all.body.lease.added, cap, JSON.stringify(all.body));
});

t("near the cap a waiting call waits for at most the request in flight and one more, then runs or is hard-gated", async (ctx) => {
  const cap = 20 * CALL_ESTIMATE;
  const user = await cappedUser(ctx.api, cap);
  const { proxy, m } = await setup(ctx);
  await m.guard(user, { model: "m" }); // loads the view
  // Another holder takes all but three calls' worth.
  const other = await ctx.api.post(`/users/${user}/leases`, { holder: "other", need: cap - 3 * CALL_ESTIMATE, want: cap });
  assert.is(other.body.lease.added, cap - 3 * CALL_ESTIMATE);
  // Two waves of concurrent calls: the second comes while the first one's request is in flight.
  const answeredDuring: number[] = [];
  const outcomes: string[] = [];
  const call = async () => {
    const before = proxy.countAnswered(LEASE_REQUEST);
    try {
      const r = await m.reserve(user, CALL);
      commitNow(r, USED);
      outcomes.push("ran");
    } catch (err) {
      assert.instance(err, LimitExceededError);
      outcomes.push("gated");
    }
    answeredDuring.push(proxy.countAnswered(LEASE_REQUEST) - before);
  };
  const first = Array.from({ length: 10 }, call);
  await eventually(() => proxy.count(LEASE_REQUEST) >= 1, 10_000, "the first wave's request sent");
  await Promise.all([...first, ...Array.from({ length: 10 }, call)]);
  assert.ok(outcomes.includes("ran"), outcomes.join(", "));
  assert.ok(Math.max(...answeredDuring) <= 2, `lease answers a call waited for: ${answeredDuring.join(", ")}`);
  await m.shutdown();
  assert.ok((await usage(ctx.api, user)).total_cost <= 3 * CALL_ESTIMATE);
});

t("near the cap a call whose estimate what the lease holds and what the service has left cover together runs", async (ctx) => {
  const cap = 20 * CALL_ESTIMATE;
  const user = await cappedUser(ctx.api, cap);
  const { m } = await setup(ctx);
  await m.guard(user, { model: "m" }); // loads the view
  // Another holder leaves $3.75: the first call's $2 slice, then $1.75, less than a call's estimate.
  const left = 3.75;
  const other = await ctx.api.post(`/users/${user}/leases`, { holder: "other", need: cap - left, want: cap - left });
  assert.is(other.body.lease.added, cap - left);
  await m.call(user, { ...CALL, usage: () => USED }, () => "ok");
  // $2.25 of the cap is this process's to spend: what its slice holds after $1.50 plus what the
  // service has left. The second call ($2 estimated) runs; the service was asked only for what
  // the slice lacks (asking the whole $2 met "less than $2 left" and the call was gated).
  await m.call(user, { ...CALL, usage: () => USED }, () => "ok");
  // $0.75 is left for it then: the third is gated.
  const refused = await rejects(() => m.call(user, { ...CALL, usage: () => USED }, () => "ok"), LimitExceededError);
  assert.is((refused as LimitExceededError).result.gate_reason, "total_spend");
  await m.shutdown();
  assert.is((await usage(ctx.api, user)).total_cost, 2 * CALL_COST);
});

t("a service that does not lease windows yet (422 on the field): windows are kept per process and calls run", async (ctx) => {
  const user = await windowedUser(ctx.api, [{ name: "rpm", metric: "requests", max: 5, window: "minute" }]);
  const { proxy, m } = await setup(ctx, { leaseIdleMs: 1_000 });
  proxy.inject(LEASE_REQUEST, { kind: "status", status: 422, body: { detail: "body/windows is not a known field" } }, 1_000);
  // Six calls in one minute.
  if (Date.now() % 60_000 > 45_000) await sleep(60_000 - (Date.now() % 60_000) + 50);
  assert.is(await callUntilRefused(m, user, "limit:rpm"), 5, "the sixth call of the minute is blocked locally");
  // Those calls spent from no lease and hold nothing once done: the idle user's book goes.
  await eventually(() => m.stats.leased_users === 0, 10_000, "the idle user's book forgotten");
  await m.shutdown();
});

t("a window refused for a large call still serves a smaller one, and a larger limit lifts the refusal before the window ends", async (ctx) => {
  const plan = await ctx.api.post("/config/plans", {
    plans: [{ name: `daily-${Date.now()}`, limits: [{ name: "daily", metric: "spend", max: 5, window: "day" }], cost_rates: { m: { input: 1, output: 1 } }, pre_call_estimate: true, pre_call_buffer_tokens: 1000 }],
  });
  const planId = plan.body.plans[0].id;
  const user = `u-window-${Date.now()}`;
  await ctx.api.post("/users", { external_user_id: user });
  await ctx.api.post(`/users/${user}/subscription`, { plan_id: planId });
  const { m } = await setup(ctx);
  // $3.50 of the day's $5.00 spent, nothing held: a call estimated at $3.00 is refused.
  const spent = await m.reserve(user, { model: "m", input_tokens: 3000 });
  commitNow(spent, { input_tokens: 2500, output_tokens: 1000 });
  await m.flush();
  await m.shutdown();
  const { m: next } = await setup(ctx, { refreshIntervalMs: 60_000 });
  const big = await rejects(() => next.reserve(user, { model: "m", input_tokens: 2000 }), LimitExceededError);
  assert.is((big as LimitExceededError).result.gate_reason, "limit:daily");
  // One estimated at $1.00 fits what is left.
  commitNow(await next.reserve(user, { model: "m", input_tokens: 0 }), { input_tokens: 0, output_tokens: 100 });
  // The limit raised: the larger call runs once the change reaches the client, not at midnight.
  await ctx.api.patch(`/config/plans/${planId}`, { limits: [{ name: "daily", metric: "spend", max: 50, window: "day" }] });
  await eventually(async () => {
    commitNow(await next.reserve(user, { model: "m", input_tokens: 2000 }), { input_tokens: 2000, output_tokens: 100 });
    return true;
  }, 30_000, "the larger call to run under the raised limit");
  await next.shutdown();
});

t.run();
