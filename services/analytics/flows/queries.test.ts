import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Db } from "mongodb";
import type { UsageFactSchema } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { toTimestamp } from "@meter/lib/time";
import type { AnalyticsServiceOptions } from "../index.ts";
import { replica, withReplicas, type Instance, type Replicas } from "../testing/instance.ts";
import { add, pick, topUsers, zero, type Figures, type Source } from "../domain/rollup.ts";
import { DAY_MS, lookback, previous } from "../domain/windows.ts";
import { RollupStore, USERS_PER_CHUNK } from "../store/rollups.ts";
import { rng } from "../../../test/support/random.ts";

/**
 * The per-user queries (summary's active users, top users) read days' user columns from a
 * cache keyed by each day's rollup version: they must give exactly what a fold of the stored
 * user chunks gives, cold or cached, and see every later write of a day (new facts, late
 * facts, another replica's roll, a rollup written without a version).
 */
type UsageInit = MessageInitShape<typeof UsageFactSchema>;
const t = suite<Replicas>("per-user queries over cached day columns");
const NOW = new Date("2026-03-10T12:00:00.000Z");
const SOURCES: (Source | undefined)[] = [undefined, "auto", "manual"];

withReplicas(t, "analytics_queries");

/** One analytics process: its own module and gRPC server over the shared test database. */
const instance = (ctx: Replicas, opts: Partial<AnalyticsServiceOptions> = {}) => replica(ctx, { now: () => NOW, ...opts });

function fact(productId: string, daysAgo: number, userId: string, rand: () => number): UsageInit {
  return {
    productId,
    eventId: randomUUID(),
    userId,
    timestamp: toTimestamp(new Date(NOW.getTime() - daysAgo * DAY_MS - Math.floor(rand() * 3_600_000))),
    model: "gpt-4o",
    tokens: BigInt(1 + Math.floor(rand() * 5_000)),
    cost: Math.round(rand() * 100_000) / 10_000,
    source: rand() < 0.2 ? "manual" : "auto",
    toolCalls: 0n,
  };
}

/** Records the facts and rolls the days they marked. */
async function record(i: Instance, facts: UsageInit[]) {
  for (let k = 0; k < facts.length; k += 10_000) await i.client.recordEvents({ usage: facts.slice(k, k + 10_000) });
  await i.module.rollPending();
}

interface Spread {
  from?: number;
  to: number;
  step?: number;
  perDay: number;
  /** Users are drawn from `user-0` .. `user-<users - 1>`. */
  users: number;
}

/** `perDay` facts of the product on every `step`-th day from `from` days ago to before `to`. */
function spread(productId: string, rand: () => number, o: Spread): UsageInit[] {
  const facts: UsageInit[] = [];
  for (let d = o.from ?? 0; d < o.to; d += o.step ?? 1) {
    for (let k = 0; k < o.perDay; k++) facts.push(fact(productId, d, `user-${Math.floor(rand() * o.users)}`, rand));
  }
  return facts;
}

/** A new product with facts spread as `o` says, recorded and rolled; its generator (seeded with `seed`) draws any more. */
async function seededProduct(a: Instance, seed: number, o: Spread) {
  const p = randomUUID();
  const rand = rng(seed);
  await record(a, spread(p, rand, o));
  return { p, rand };
}

/** Numbers as numbers (bigints too), message type names left out. */
const plain = (x: unknown): unknown => JSON.parse(JSON.stringify(x ?? null, (k, v) => (k === "$typeName" ? undefined : typeof v === "bigint" ? Number(v) : v)));

/** What the queries gave before the cache: each day's user chunks folded into a Map, in window order. */
async function reference(db: Db, productId: string, days: readonly string[], source: Source | undefined) {
  const store = new RollupStore(db);
  const users = new Map<string, Figures>();
  for (const doc of await store.readDays(productId, days)) {
    await store.readUserRows(doc, (id, auto, manual) => {
      const f = pick({ auto, manual }, source);
      if (f[0] === 0 && f[1] === 0 && f[2] === 0) return;
      users.set(id, add(users.get(id) ?? zero(), f));
    });
  }
  return { active: [...users.values()].filter((f) => f[2] > 0).length, top: topUsers(users, 100) };
}

/** Asserts summary and top users (every source filter) equal the reference, to the last bit. */
async function assertExact(db: Db, i: Instance, productId: string, days: number, what: string) {
  const w = lookback(NOW, days);
  for (const source of SOURCES) {
    const filter = source ? { source } : undefined;
    const [s, top, cur, prev] = await Promise.all([
      i.client.getSummary({ productId, days, filter }),
      i.client.getTopUsers({ productId, days, limit: 100, filter }),
      reference(db, productId, w.days, source),
      reference(db, productId, previous(w).days, source),
    ]);
    assert.is(Number(s.current!.activeUsers), cur.active, `${what}: active users (${source ?? "both"})`);
    assert.is(Number(s.previousPeriod!.activeUsers), prev.active, `${what}: previous active users (${source ?? "both"})`);
    assert.equal(plain(top.users), plain(cur.top), `${what}: top users (${source ?? "both"})`);
  }
}

t("summary and top users equal a fold of the user chunks, cold and cached, and of the facts", async (ctx) => {
  const a = await instance(ctx);
  const p = randomUUID();
  const rand = rng(11);
  // Today holds more users than one chunk; the other days a few hundred of 3,000 users.
  const today = Array.from({ length: USERS_PER_CHUNK + 700 }, (_, u) => fact(p, 0, `user-${u}`, rand));
  const facts = [...today, ...spread(p, rand, { from: 1, to: 40, step: 3, perDay: 300, users: 3_000 })];
  await record(a, facts);

  await assertExact(ctx.db, a, p, 30, "cold");
  await assertExact(ctx.db, a, p, 30, "cached");
  await assertExact(ctx.db, a, p, 7, "shorter window, cached");

  // Against the facts themselves: events and tokens exact, cost to rounding (another order of additions).
  const bySum = new Map<string, Figures>();
  for (const f of facts) bySum.set(f.userId!, add(bySum.get(f.userId!) ?? zero(), [f.cost!, Number(f.tokens), 1]));
  const top = await a.client.getTopUsers({ productId: p, days: 90, limit: 100 });
  const s = await a.client.getSummary({ productId: p, days: 90 });
  assert.is(Number(s.current!.activeUsers), bySum.size);
  for (const u of top.users) {
    const f = bySum.get(u.userId)!;
    assert.ok(Math.abs(u.cost - f[0]) < 1e-9, `${u.userId}: cost ${u.cost} != ${f[0]}`);
    assert.equal([Number(u.tokens), Number(u.events)], [f[1], f[2]]);
  }
  const expected = [...bySum].sort(([x, a], [y, b]) => b[0] - a[0] || (x < y ? -1 : 1)).slice(0, 5).map(([id]) => id);
  assert.equal(top.users.slice(0, 5).map((u) => u.userId), expected);
});

t("a day rolled again is read again: new facts, late facts, another replica's roll", async (ctx) => {
  const a = await instance(ctx);
  const b = await instance(ctx);
  const { p, rand } = await seededProduct(a, 5, { to: 20, perDay: 200, users: 1_000 });
  await assertExact(ctx.db, a, p, 90, "first read");

  // Today and a closed day take facts, rolled by the other replica: a's cache must not answer for them.
  const big = (daysAgo: number, user: string): UsageInit => ({ ...fact(p, daysAgo, user, rand), cost: 1_000, source: "auto" });
  await record(b, [big(0, "fresh-today"), big(12, "user-3"), big(12, "new-on-day-12")]);
  let top = await a.client.getTopUsers({ productId: p, days: 90, limit: 3 });
  assert.equal(top.users.map((u) => u.userId).sort(), ["fresh-today", "new-on-day-12", "user-3"]);
  await assertExact(ctx.db, a, p, 90, "after another replica rolled");

  // A late fact: a day before the ledger's window (35 days), stored apart and rolled with its day.
  await record(a, [{ ...big(60, "late-user"), cost: 5_000 }]);
  top = await a.client.getTopUsers({ productId: p, days: 90, limit: 1 });
  assert.equal(top.users.map((u) => [u.userId, u.cost]), [["late-user", 5_000]]);
  await assertExact(ctx.db, a, p, 90, "after a late fact");
});

t("rollups written without a version (before it existed, or by a replica not yet upgraded) are read and invalidated", async (ctx) => {
  const a = await instance(ctx);
  const { p } = await seededProduct(a, 9, { to: 10, perDay: 150, users: 500 });
  const days = ctx.db.collection<{ _id: string; product_id: string; day: string; computed_at: Date; user_chunks: number }>("day_rollups");
  await days.updateMany({ product_id: p }, { $unset: { version: "" } });
  await assertExact(ctx.db, a, p, 30, "without versions");

  // An old roller rewrites today's users and then its day document with a new computed_at only.
  const today = lookback(NOW, 1).days[0]!;
  const chunks = ctx.db.collection<{ _id: string; users: string }>("day_user_rollups");
  const chunk = (await chunks.findOne({ _id: `${p}|${today}|0` }))!;
  const rows = JSON.parse(chunk.users) as [string, Figures, Figures][];
  rows.push(["zz-old-writer", [7_777, 1, 1], [0, 0, 0]]);
  await chunks.replaceOne({ _id: chunk._id }, { ...chunk, users: JSON.stringify(rows) });
  await days.updateOne({ _id: `${p}|${today}` }, { $set: { computed_at: new Date(NOW.getTime() + 1) } });
  const top = await a.client.getTopUsers({ productId: p, days: 30, limit: 1 });
  assert.equal(top.users.map((u) => [u.userId, u.cost]), [["zz-old-writer", 7_777]]);
  await assertExact(ctx.db, a, p, 30, "after an unversioned rewrite");
});

t("a process just started answers from the stored window answers, and folds a window rolled since", async (ctx) => {
  const a = await instance(ctx);
  const { p, rand } = await seededProduct(a, 21, { to: 40, step: 2, perDay: 200, users: 800 });
  await assertExact(ctx.db, a, p, 30, "folded, answers stored");

  // A new process (empty cache) gives the very figures from the answers alone.
  const b = await instance(ctx);
  await assertExact(ctx.db, b, p, 30, "a new process, from the stored answers");

  // It reads the stored answer, not the chunks: one made up at the same versions is what it says.
  const answers = ctx.db.collection<{ _id: string; active: number }>("window_answers");
  const id = `${p}|${lookback(NOW, 30).days.at(-1)}|${lookback(NOW, 30).days[0]}|all`;
  assert.ok(await answers.findOne({ _id: id }), "the 30-day window's answer is stored");
  await answers.updateOne({ _id: id }, { $set: { active: 12_345 } });
  const c = await instance(ctx);
  assert.is(Number((await c.client.getSummary({ productId: p, days: 30 })).current!.activeUsers), 12_345);

  // A day of the window rolled since: the answer no longer matches its versions and is not used.
  await record(a, [fact(p, 0, "new-user", rand)]);
  const d = await instance(ctx);
  await assertExact(ctx.db, d, p, 30, "a new process after a day was rolled again");
  await assertExact(ctx.db, c, p, 30, "the process that read the answer, after a day was rolled again");
  // The fold stored the new answer: the next new process reads it.
  const stored = await answers.findOne({ _id: id });
  assert.is.not(stored!.active, 12_345, "the stale answer was replaced");
  await assertExact(ctx.db, await instance(ctx), p, 30, "a new process, from the new answer");
});

t("with no cache memory every query reads the chunks and gives the same figures", async (ctx) => {
  const a = await instance(ctx, { userCacheMb: 0 });
  const { p } = await seededProduct(a, 3, { to: 5, perDay: 100, users: 200 });
  await assertExact(ctx.db, a, p, 30, "uncached");
  await assertExact(ctx.db, a, p, 30, "uncached again");
});

t.run();
