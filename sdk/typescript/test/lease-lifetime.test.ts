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

t.run();
