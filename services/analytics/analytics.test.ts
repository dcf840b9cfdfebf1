import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { GateFactSchema, UsageFactSchema } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { timestampDate, toTimestamp } from "@meter/lib/time";
import type { AnalyticsServiceOptions } from "./index.ts";
import { replica, withReplicas, type Replicas } from "./testing/instance.ts";
import { rpcCode } from "../../test/support/rpc.ts";

type UsageInit = MessageInitShape<typeof UsageFactSchema>;
type GateInit = MessageInitShape<typeof GateFactSchema>;

const t = suite<Replicas>("analytics service over gRPC");
/** A pinned "now": one second before midnight UTC. */
const NOW = new Date("2026-03-10T23:59:59.000Z");

withReplicas(t, "analytics");

/** One analytics process: its own module and gRPC server over the shared test database. */
const instance = (ctx: Replicas, opts: Partial<AnalyticsServiceOptions> = {}) => replica(ctx, { now: () => NOW, ...opts });

function usage(productId: string, ts: string, f: Partial<UsageInit> = {}): UsageInit {
  return {
    productId,
    eventId: randomUUID(),
    userId: "u1",
    timestamp: toTimestamp(new Date(ts)),
    model: "gpt-4o",
    tokens: 100n,
    cost: 0.1,
    source: "auto",
    toolCalls: 0n,
    ...f,
  };
}

function gate(productId: string, ts: string, status: "soft_gate" | "hard_gate"): GateInit {
  return { productId, eventId: randomUUID(), userId: "u1", timestamp: toTimestamp(new Date(ts)), status, blocked: status === "hard_gate" };
}

/** Deep equality with bigints compared as numbers (so that failures print readably). */
const plain = (x: unknown): unknown => JSON.parse(JSON.stringify(x ?? null, (_k, v) => (typeof v === "bigint" ? Number(v) : v)));
const eq = (a: unknown, b: unknown, msg?: string) => assert.equal(plain(a), plain(b), msg);
const close = (a: number, b: number, what: string) => assert.ok(Math.abs(a - b) < 1e-6, `${what}: ${a} != ${b}`);

/** A seeded pseudo-random generator, so that failures can be replayed. */
function rng(seed: number) {
  return () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
}

t("counts every fact once however often it is replayed", async (ctx) => {
  const a = await instance(ctx);
  const p = randomUUID();
  const rand = rng(7);
  const facts = Array.from({ length: 60 }, (_, i) =>
    usage(p, new Date(NOW.getTime() - Math.floor(rand() * 5 * 86_400_000)).toISOString(), {
      userId: `u${i % 7}`,
      tokens: BigInt(1 + Math.floor(rand() * 1000)),
      cost: Math.round(rand() * 10_000) / 1000,
    }),
  );
  const first = await a.client.recordEvents({ usage: facts.slice(0, 40) });
  eq([first.recorded, first.duplicates], [40, 0]);
  // The same call again stores nothing; a call mixing old and new facts is a new segment
  // (stored), and its old facts still count once (the figures below).
  const replay = await a.client.recordEvents({ usage: facts.slice(0, 40) });
  eq([replay.recorded, replay.duplicates], [0, 40]);
  const mixed = await a.client.recordEvents({ usage: facts.slice(20) });
  eq(mixed.recorded + mixed.duplicates, 40);
  await Promise.all([1, 2, 3].map(() => a.client.recordEvents({ usage: facts })));
  await a.module.rollPending();
  await a.client.recordEvents({ usage: facts.slice(0, 10) });
  await a.module.rollPending();

  const s = await a.client.getSummary({ productId: p, days: 7 });
  close(s.current!.totalCost, facts.reduce((x, f) => x + f.cost!, 0), "cost");
  eq(s.current!.totalTokens, facts.reduce((x, f) => x + (f.tokens as bigint), 0n));
  eq(s.current!.totalEvents, 60n);
  eq(s.current!.activeUsers, 7n);
});

t("windows: whole UTC days ending tomorrow at 00:00, previous period just before", async (ctx) => {
  const a = await instance(ctx);
  const p = randomUUID();
  await a.client.recordEvents({
    usage: [
      usage(p, "2026-03-10T23:59:58.999Z", { cost: 1, tokens: 1n, userId: "today" }),
      usage(p, "2026-03-09T00:00:00.000Z", { cost: 2, tokens: 2n, userId: "yesterday" }),
      usage(p, "2026-03-08T23:59:59.999Z", { cost: 4, tokens: 4n, userId: "prev-late" }),
      usage(p, "2026-03-07T00:00:00.000Z", { cost: 8, tokens: 8n, userId: "prev-early" }),
      usage(p, "2026-03-06T23:59:59.999Z", { cost: 16, tokens: 16n, userId: "too-old" }),
    ],
  });
  await a.module.rollPending();
  const s = await a.client.getSummary({ productId: p, days: 2 });
  eq(timestampDate(s.periodStart!).toISOString(), "2026-03-09T00:00:00.000Z");
  eq(timestampDate(s.periodEnd!).toISOString(), "2026-03-11T00:00:00.000Z");
  eq([s.current!.totalCost, s.current!.totalTokens, s.current!.totalEvents, s.current!.activeUsers], [3, 3n, 2n, 2n]);
  const prev = s.previousPeriod!;
  eq([prev.totalCost, prev.totalTokens, prev.totalEvents, prev.activeUsers], [12, 12n, 2n, 2n]);

  // One second later it is a new day: the window moves by one day.
  const b = await instance(ctx, { now: () => new Date("2026-03-11T00:00:00.000Z") });
  const s2 = await b.client.getSummary({ productId: p, days: 2 });
  eq(timestampDate(s2.periodStart!).toISOString(), "2026-03-10T00:00:00.000Z");
  eq(timestampDate(s2.periodEnd!).toISOString(), "2026-03-12T00:00:00.000Z");
  eq(s2.current!.totalCost, 1);
  eq(s2.previousPeriod!.totalCost, 6);

  const one = await a.client.getSummary({ productId: p, days: 1 });
  eq(one.current!.totalCost, 1);
  eq(one.previousPeriod!.totalCost, 2);
  const dflt = await a.client.getSummary({ productId: p });
  eq(timestampDate(dflt.periodStart!).toISOString(), "2026-02-09T00:00:00.000Z");
  eq(dflt.current!.totalCost, 31);
});

t("timeseries are dense, oldest first; gate timeseries count soft and hard gates", async (ctx) => {
  const a = await instance(ctx);
  const p = randomUUID();
  await a.client.recordEvents({
    usage: [usage(p, "2026-03-08T12:00:00Z", { cost: 0.5, tokens: 50n }), usage(p, "2026-03-08T13:00:00Z", { cost: 0.25, tokens: 25n })],
    gates: [
      gate(p, "2026-03-10T01:00:00Z", "soft_gate"),
      gate(p, "2026-03-10T02:00:00Z", "soft_gate"),
      gate(p, "2026-03-10T03:00:00Z", "hard_gate"),
      gate(p, "2026-03-07T03:00:00Z", "hard_gate"),
    ],
  });
  await a.module.rollPending();
  const ts = await a.client.getTimeseries({ productId: p, days: 4 });
  eq(
    ts.data.map((d) => [d.date, d.cost, d.tokens, d.events]),
    [
      ["2026-03-07", 0, 0n, 0n],
      ["2026-03-08", 0.75, 75n, 2n],
      ["2026-03-09", 0, 0n, 0n],
      ["2026-03-10", 0, 0n, 0n],
    ],
  );
  const gs = await a.client.getGateTimeseries({ productId: p, days: 3 });
  eq(
    gs.data.map((d) => [d.date, d.softGates, d.hardGates]),
    [
      ["2026-03-08", 0n, 0n],
      ["2026-03-09", 0n, 0n],
      ["2026-03-10", 2n, 1n],
    ],
  );
  eq((await a.client.getTimeseries({ productId: p, days: 365 })).data.length, 365);
});

t("breakdown: per model, highest cost first, shares of cost summing to 100", async (ctx) => {
  const a = await instance(ctx);
  const p = randomUUID();
  await a.client.recordEvents({
    usage: [
      usage(p, "2026-03-10T01:00:00Z", { model: "a", cost: 1, tokens: 10n }),
      usage(p, "2026-03-09T01:00:00Z", { model: "a", cost: 1, tokens: 10n }),
      usage(p, "2026-03-10T01:00:00Z", { model: "b", cost: 1, tokens: 500n }),
      usage(p, "2026-03-10T01:00:00Z", { model: undefined, cost: 0, tokens: 0n, source: "manual" }),
      usage(p, "2026-03-10T02:00:00Z", { model: "c", cost: 0, tokens: 7n }),
    ],
  });
  await a.module.rollPending();
  const b = await a.client.getBreakdown({ productId: p, days: 7 });
  eq(
    b.models.map((m) => [m.model, m.cost, m.tokens, m.pct]),
    [
      ["a", 2, 20n, 66.67],
      ["b", 1, 500n, 33.33],
      ["c", 0, 7n, 0],
      ["unknown", 0, 0n, 0],
    ],
  );
  close(b.models.reduce((x, m) => x + m.pct, 0), 100, "pct sum");
  // Nothing cost anything in this window: shares of tokens instead.
  const q = randomUUID();
  await a.client.recordEvents({
    usage: [usage(q, "2026-03-10T01:00:00Z", { model: "x", cost: 0, tokens: 1n }), usage(q, "2026-03-10T01:00:00Z", { model: "y", cost: 0, tokens: 3n })],
  });
  await a.module.rollPending();
  eq((await a.client.getBreakdown({ productId: q })).models.map((m) => [m.model, m.pct]), [["y", 75], ["x", 25]]);
});

t("top users: by cost, then user id; limited", async (ctx) => {
  const a = await instance(ctx);
  const p = randomUUID();
  await a.client.recordEvents({
    usage: [
      usage(p, "2026-03-10T01:00:00Z", { userId: "carol", cost: 3 }),
      usage(p, "2026-03-01T01:00:00Z", { userId: "bob", cost: 2, tokens: 5n }),
      usage(p, "2026-03-02T01:00:00Z", { userId: "bob", cost: 1, tokens: 5n }),
      usage(p, "2026-03-10T01:00:00Z", { userId: "alice", cost: 1 }),
      usage(p, "2026-03-10T01:00:00Z", { userId: "dave", cost: 0.5 }),
    ],
  });
  await a.module.rollPending();
  const all = await a.client.getTopUsers({ productId: p, days: 30 });
  eq(
    all.users.map((u) => [u.userId, u.cost, u.tokens, u.events]),
    [
      ["bob", 3, 10n, 2n],
      ["carol", 3, 100n, 1n],
      ["alice", 1, 100n, 1n],
      ["dave", 0.5, 100n, 1n],
    ],
  );
  eq((await a.client.getTopUsers({ productId: p, days: 30, limit: 2 })).users.map((u) => u.userId), ["bob", "carol"]);
  eq((await a.client.getTopUsers({ productId: p, days: 1, limit: 1 })).users.map((u) => u.userId), ["carol"]);
});

t("the source filter restricts usage figures to manual or auto events", async (ctx) => {
  const a = await instance(ctx);
  const p = randomUUID();
  await a.client.recordEvents({
    usage: [
      usage(p, "2026-03-10T01:00:00Z", { userId: "m1", source: "manual", cost: 5, tokens: 0n, model: undefined }),
      usage(p, "2026-03-10T01:00:00Z", { userId: "a1", source: "auto", cost: 1, tokens: 10n, model: "m" }),
      usage(p, "2026-03-03T01:00:00Z", { userId: "a1", source: "manual", cost: 2, tokens: 0n, model: "m" }),
    ],
  });
  await a.module.rollPending();
  const manual = { source: "manual" };
  const s = await a.client.getSummary({ productId: p, days: 30, filter: manual });
  eq([s.current!.totalCost, s.current!.totalEvents, s.current!.activeUsers], [7, 2n, 2n]);
  const auto = await a.client.getSummary({ productId: p, days: 30, filter: { source: "auto" } });
  eq([auto.current!.totalCost, auto.current!.totalEvents, auto.current!.activeUsers], [1, 1n, 1n]);
  const ts = await a.client.getTimeseries({ productId: p, days: 1, filter: manual });
  eq(ts.data.map((d) => [d.date, d.cost, d.events]), [["2026-03-10", 5, 1n]]);
  const b = await a.client.getBreakdown({ productId: p, days: 30, filter: manual });
  eq(b.models.map((m) => [m.model, m.cost, m.pct]), [["unknown", 5, 71.43], ["m", 2, 28.57]]);
  const top = await a.client.getTopUsers({ productId: p, days: 30, filter: { source: "auto" } });
  eq(top.users.map((u) => [u.userId, u.cost]), [["a1", 1]]);
});

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

t("refuses bad parameters and bad facts, storing nothing of a refused batch", async (ctx) => {
  const a = await instance(ctx);
  const p = randomUUID();
  eq(await rpcCode(a.client.getSummary({ productId: p, days: 366 })), Code.InvalidArgument);
  eq(await rpcCode(a.client.getSummary({ productId: p, days: -1 })), Code.InvalidArgument);
  eq(await rpcCode(a.client.getSummary({ productId: "" })), Code.InvalidArgument);
  eq(await rpcCode(a.client.getTimeseries({ productId: p, filter: { source: "batch" } })), Code.InvalidArgument);
  eq(await rpcCode(a.client.getTopUsers({ productId: p, limit: 101 })), Code.InvalidArgument);
  eq(await rpcCode(a.client.getWindowReport({ productId: p })), Code.InvalidArgument);
  const ok = usage(p, "2026-03-10T01:00:00Z");
  eq(await rpcCode(a.client.recordEvents({ usage: [ok, usage(p, "2026-03-10T01:00:00Z", { source: "other" })] })), Code.InvalidArgument);
  eq(await rpcCode(a.client.recordEvents({ usage: [{ ...ok, timestamp: undefined }] })), Code.InvalidArgument);
  eq(await rpcCode(a.client.recordEvents({ gates: [{ ...gate(p, "2026-03-10T01:00:00Z", "soft_gate"), status: "ok" }] })), Code.InvalidArgument);
  await a.module.rollPending();
  eq((await a.client.getSummary({ productId: p })).current!.totalEvents, 0n);
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

t("window report: explicit window widened to whole UTC days, gates and top users", async (ctx) => {
  const a = await instance(ctx);
  const p = randomUUID();
  await a.client.recordEvents({
    usage: [
      usage(p, "2026-03-02T00:00:00Z", { userId: "x", cost: 1, tokens: 10n }),
      usage(p, "2026-03-08T23:59:59Z", { userId: "y", cost: 2, tokens: 20n }),
      usage(p, "2026-03-08T10:00:00Z", { userId: "y", cost: 2, tokens: 20n }),
      usage(p, "2026-03-09T00:00:00Z", { userId: "z", cost: 100 }),
      usage(p, "2026-03-01T23:59:59Z", { userId: "z", cost: 100 }),
    ],
    gates: [gate(p, "2026-03-05T00:00:00Z", "soft_gate"), gate(p, "2026-03-09T00:00:00Z", "hard_gate")],
  });
  await a.module.rollPending();
  const r = await a.client.getWindowReport({
    productId: p,
    start: toTimestamp(new Date("2026-03-02T00:00:00Z")),
    end: toTimestamp(new Date("2026-03-09T00:00:00Z")),
    topUsersLimit: 5,
  });
  eq([r.totals!.totalCost, r.totals!.totalTokens, r.totals!.totalEvents, r.totals!.activeUsers], [5, 50n, 3n, 2n]);
  eq([r.softGates, r.hardGates], [1n, 0n]);
  eq(r.topUsers.map((u) => [u.userId, u.cost, u.tokens]), [["y", 4, 40n], ["x", 1, 10n]]);
});

t.run();
