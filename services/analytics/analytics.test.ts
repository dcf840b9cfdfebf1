import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { rpcCode } from "../../test/support/rpc.ts";
import { close, eq, gate, instance, NOW, usage } from "./testing/facts.ts";
import { withReplicas, type Replicas } from "./testing/instance.ts";

// What no one handler decides alone: products kept apart, crashes, replicas, the background
// roller (each handler's own test is beside it in handlers/).
const t = suite<Replicas>("analytics service over gRPC");
withReplicas(t, "analytics");

t("products are isolated", async (ctx) => {
  const a = await instance(ctx);
  const p = randomUUID();
  const q = randomUUID();
  await a.client.recordEvents({ usage: [usage(p, "2026-03-10T01:00:00Z")], gates: [gate(p, "2026-03-10T01:00:00Z", "soft_gate")] });
  await a.module.rollPending();
  const s = await a.client.getSummary({ productId: q });
  eq([s.current!.totalCost, s.current!.totalEvents, s.current!.activeUsers], [0, 0n, 0n]);
  eq((await a.client.getTopUsers({ productId: q })).users, []);
  eq((await a.client.getBreakdown({ productId: q })).models, []);
  assert.ok((await a.client.getTimeseries({ productId: q })).data.every((d) => d.events === 0n));
  assert.ok((await a.client.getGateTimeseries({ productId: q })).data.every((d) => d.softGates === 0n));
  eq((await a.client.getSummary({ productId: p })).current!.totalEvents, 1n);
});

t("a crash after storing facts and before rolling up: a new instance finishes the work", async (ctx) => {
  const p = randomUUID();
  const crashing = await instance(ctx, {
    faults: {
      afterLedgerWrite() {
        throw new Error("simulated crash");
      },
    },
  });
  const facts = [usage(p, "2026-03-10T01:00:00Z", { cost: 1.5 }), usage(p, "2026-03-09T01:00:00Z", { cost: 2.5, userId: "u2" })];
  assert.ok(await rpcCode(crashing.client.recordEvents({ usage: facts })), "the call must fail");
  await crashing.close();

  const fresh = await instance(ctx);
  await fresh.module.rollPending();
  let s = await fresh.client.getSummary({ productId: p });
  eq([s.current!.totalCost, s.current!.totalEvents, s.current!.activeUsers], [4, 2n, 2n]);
  // The sender was not acknowledged, so it sends the batch again: still counted once.
  const replay = await fresh.client.recordEvents({ usage: facts });
  eq([replay.recorded, replay.duplicates], [0, 2]);
  await fresh.module.rollPending();
  s = await fresh.client.getSummary({ productId: p });
  eq([s.current!.totalCost, s.current!.totalEvents], [4, 2n]);
});

t("a crash between writing a rollup and clearing its mark: the day is recomputed, not double counted", async (ctx) => {
  const p = randomUUID();
  let crashes = 0;
  const crashing = await instance(ctx, {
    rollLeaseMs: 300,
    faults: {
      afterRollupWrite() {
        crashes++;
        throw new Error("simulated crash");
      },
    },
  });
  await crashing.client.recordEvents({ usage: [usage(p, "2026-03-10T01:00:00Z", { cost: 3 })] });
  await crashing.module.rollPending().then(
    () => assert.unreachable("the roller must have crashed"),
    () => undefined,
  );
  eq(crashes, 1);
  await crashing.close();
  const fresh = await instance(ctx);
  await fresh.client.recordEvents({ usage: [usage(p, "2026-03-10T02:00:00Z", { cost: 4 })] });
  // The crashed roller's lease on the day runs out, then the fresh instance recomputes it.
  const deadline = Date.now() + 20_000;
  while ((await fresh.module.rollPending()) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const s = await fresh.client.getSummary({ productId: p, days: 1 });
  eq([s.current!.totalCost, s.current!.totalEvents], [7, 2n]);
});

t("replicas recording and rolling the same facts concurrently count them once", async (ctx) => {
  const p = randomUUID();
  const [a, b] = [await instance(ctx), await instance(ctx)];
  const facts = Array.from({ length: 200 }, (_, i) =>
    usage(p, new Date(NOW.getTime() - (i % 3) * 86_400_000 - i * 1000).toISOString(), { userId: `u${i % 13}`, cost: 0.01 * (i + 1), tokens: BigInt(i) }),
  );
  const gates = Array.from({ length: 20 }, (_, i) => gate(p, NOW.toISOString(), i % 4 === 0 ? "hard_gate" : "soft_gate"));
  await Promise.all([
    ...[a, b, a, b].map((x, i) => x.client.recordEvents({ usage: facts.slice(i * 40, i * 40 + 120), gates })),
    a.module.rollPending(),
    b.module.rollPending(),
  ]);
  await Promise.all([a.module.rollPending(), b.module.rollPending()]);
  const s = await b.client.getSummary({ productId: p, days: 3 });
  close(s.current!.totalCost, facts.reduce((x, f) => x + f.cost!, 0), "cost");
  eq(s.current!.totalTokens, facts.reduce((x, f) => x + (f.tokens as bigint), 0n));
  eq(s.current!.totalEvents, 200n);
  eq(s.current!.activeUsers, 13n);
  const g = await a.client.getGateTimeseries({ productId: p, days: 1 });
  eq([g.data[0]!.softGates, g.data[0]!.hardGates], [15n, 5n]);
});

t("the background roller makes new events visible within seconds", async (ctx) => {
  const a = await instance(ctx, { rollIntervalMs: 200, now: () => new Date() });
  const p = randomUUID();
  await a.client.recordEvents({ usage: [usage(p, new Date().toISOString(), { cost: 9 })] });
  const deadline = Date.now() + 10_000;
  let cost = 0;
  while (Date.now() < deadline && cost !== 9) {
    cost = (await a.client.getSummary({ productId: p, days: 1 })).current!.totalCost;
    if (cost !== 9) await new Promise((r) => setTimeout(r, 100));
  }
  eq(cost, 9);
  await a.close(); // its background roller must not hold days that later tests roll by hand
});

t.run();
