// A call that runs longer than its lease's lifetime keeps its estimate held at the service: the
// client asks again while it runs, and the service keeps a live lease even with nothing more to
// grant, so another replica is not granted the same dollars meanwhile.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { setTimeout as sleep } from "node:timers/promises";
import { LimitExceededError, Meter } from "../src/index.ts";
import { CALL_COST, CALL_ESTIMATE, cappedUser } from "../../../bench/lease-run.ts";
import { memoryLogger, type ProductCtx, rejects, startWithProduct, stopAll, usage } from "./support/fixtures.ts";

const GRACE_MS = 200;
const TTL_MS = 1_000;

const t = suite<ProductCtx & { meters: Meter[] }>("sdk: a lease under a call longer than its lifetime");
t.before(async (ctx) => {
  await startWithProduct(ctx, "sdk lease lifetime", { services: { ingestion: { leaseGraceMs: GRACE_MS } } });
  ctx.meters = [];
});
t.after(async (ctx) => {
  await stopAll(ctx.stack, ctx.meters, []);
});

const CALL = { model: "m", input_tokens: 1000 };
const USED = { input_tokens: 1000, output_tokens: 500 };

t("the running call's estimate stays held past the lifetime: a second replica is refused until it ends", async (ctx) => {
  const user = await cappedUser(ctx.api, CALL_ESTIMATE);
  const replica = () => {
    const m = new Meter({ apiKey: ctx.apiKey, baseURL: ctx.stack.apiUrl, logger: memoryLogger(), leases: true, leaseTtlMs: TTL_MS, leaseIdleMs: 400 });
    ctx.meters.push(m);
    return m;
  };
  const [a, b] = [replica(), replica()];
  let started!: () => void;
  let finish!: () => void;
  const began = new Promise<void>((r) => (started = r));
  const ends = new Promise<void>((r) => (finish = r));
  const long = a.call(user, { ...CALL, usage: () => USED }, async () => {
    started();
    await ends;
    return "ok";
  });
  await began;
  // The first lease's lifetime and the service's grace pass twice while the call runs.
  await sleep(2 * (TTL_MS + GRACE_MS));
  const refused = await rejects(() => b.call(user, { ...CALL, usage: () => USED }, () => "ok"), LimitExceededError);
  assert.is((refused as LimitExceededError).result.gate_reason, "total_spend");
  finish();
  assert.is(await long, "ok");
  await a.shutdown();
  await b.shutdown();
  assert.is((await usage(ctx.api, user)).total_cost, CALL_COST, "the long call, counted once");
});

t("a call's need the service refuses renews nothing: past the lease's end the client asks again, and a call that fits runs", async (ctx) => {
  // $3: the first call is granted all of it and spends $1.20; the second needs $2 and holds $1.80,
  // so its need of $0.20 is refused, and the service keeps the lease to its first end.
  const user = await cappedUser(ctx.api, 3);
  const ttl = 3_000;
  const m = new Meter({ apiKey: ctx.apiKey, baseURL: ctx.stack.apiUrl, logger: memoryLogger(), leases: true, leaseTtlMs: ttl });
  ctx.meters.push(m);
  await m.call(user, { ...CALL, usage: () => ({ input_tokens: 1000, output_tokens: 200 }) }, () => "ok");
  // The service wrote the lease before the call returned: it ends (and lapses) no later than its lifetime after this.
  const granted = Date.now();
  // Settled against the lease at the service, as a replica's flush does within seconds.
  assert.ok(await m.flush());
  await sleep(ttl / 2);
  const refused = await rejects(() => m.call(user, { ...CALL, usage: () => USED }, () => "ok"), LimitExceededError);
  assert.is((refused as LimitExceededError).result.gate_reason, "total_spend");
  // Past the lease's end and the service's grace, before the end a renewal by the refusal would have given.
  await sleep(Math.max(0, granted + ttl + GRACE_MS + 300 - Date.now()));
  const waitsBefore = m.stats.lease_waits ?? 0;
  // $1.50 fits the cap ($1.20 spent): asked of the service again, since the lease ended there. Taking the
  // refusal for a renewal, the client held the lease live until 3 s after the refusal and answered from it
  // what the service had restarted (this call was refused).
  await m.call(user, { model: "m", input_tokens: 500, usage: () => ({ input_tokens: 500, output_tokens: 0 }) }, () => "ok");
  assert.is((m.stats.lease_waits ?? 0) - waitsBefore, 1, "the call waited for a lease answer");
  await m.shutdown();
  assert.is((await usage(ctx.api, user)).total_cost, 1.7);
});

t.run();
