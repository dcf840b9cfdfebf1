import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { suite } from "uvu";
import { freshDbName, testMongoUrl } from "../../../test/support/database.ts";
import { close, eq, gate, NOW, usage, type UsageInit } from "../testing/facts.ts";
import { startInstance, type Instance } from "../testing/instance.ts";

interface Ctx {
  client: MongoClient;
  /** Whole ledger segments read (finds without a projection); probes ask for `_id` only. */
  segmentReads: number;
  instances: Instance[];
}

const t = suite<Ctx>("rolling a day again");

t.before(async (ctx) => {
  ctx.client = new MongoClient(await testMongoUrl(), { monitorCommands: true });
  await ctx.client.connect();
  ctx.segmentReads = 0;
  ctx.client.on("commandStarted", (e) => {
    if (e.commandName === "find" && e.command.find === "ledger_segments" && e.command.projection === undefined) ctx.segmentReads++;
  });
  ctx.instances = [];
});

t.after(async (ctx) => {
  for (const i of ctx.instances) await i.close();
  await ctx.client.close();
});

const DAY = "2026-03-10";
const at = (hour: number, minute: number) => `${DAY}T${String(hour).padStart(2, "0")}:${String(minute % 60).padStart(2, "0")}:00Z`;

function totals(facts: readonly UsageInit[]) {
  const users = new Map<string, number>();
  for (const f of facts) users.set(f.userId!, (users.get(f.userId!) ?? 0) + f.cost!);
  return { cost: facts.reduce((x, f) => x + f.cost!, 0), tokens: facts.reduce((x, f) => x + Number(f.tokens), 0), events: facts.length, users };
}

t("a day rolled again reads only the hours that gained a segment, and counts each event once", async (ctx) => {
  const db = ctx.client.db(freshDbName("analytics_roll_again"));
  const a = await startInstance(db, { now: () => NOW });
  ctx.instances.push(a);
  const p = randomUUID();
  // Hours 01, 05 and 09; a third of the events in team t1.
  const early = Array.from({ length: 30 }, (_, i) =>
    usage(p, at(1 + (i % 3) * 4, i), { userId: `u${i % 5}`, tokens: BigInt(10 + i), cost: (i + 1) / 100, ...(i % 3 === 0 && { teamId: "t1" }) }),
  );
  // Two calls: each stores one segment in each of the three hours.
  await a.client.recordEvents({ usage: early.slice(0, 15), gates: [gate(p, at(5, 1), "soft_gate")] });
  await a.client.recordEvents({ usage: early.slice(15), gates: [gate(p, at(9, 2), "hard_gate")] });
  await a.module.rollPending();

  // Hour 09 gains a segment, which also holds one of its events again in another grouping.
  const more = Array.from({ length: 10 }, (_, i) => usage(p, at(9, 30 + i), { userId: `u${i % 7}`, tokens: 5n, cost: 0.25, ...(i % 2 === 0 && { teamId: "t1" }) }));
  const repeat = early.find((f) => f.timestamp!.seconds === BigInt(Date.parse(at(9, 2)) / 1000))!;
  ctx.segmentReads = 0;
  await a.client.recordEvents({ usage: [...more, repeat], gates: [gate(p, at(9, 45), "soft_gate")] });
  await a.module.rollPending();
  // Hour 09's three segments and the read that finds no fourth; the whole day again would be its
  // seven segments and a read past the last in each of its 24 hours.
  eq(ctx.segmentReads, 4, "whole segments read by the second roll");

  const all = [...early, ...more];
  const want = totals(all);
  const s = (await a.client.getSummary({ productId: p, days: 7 })).current!;
  close(s.totalCost, want.cost, "cost");
  eq([s.totalTokens, s.totalEvents, s.activeUsers], [BigInt(want.tokens), BigInt(want.events), BigInt(want.users.size)]);
  const top = await a.client.getTopUsers({ productId: p, days: 7, limit: 100 });
  eq(top.users.length, want.users.size);
  for (const u of top.users) close(u.cost, want.users.get(u.userId)!, `user ${u.userId}`);
  const team = totals(all.filter((f) => f.teamId === "t1"));
  const ts = (await a.client.getSummary({ productId: p, days: 7, teamId: "t1" })).current!;
  close(ts.totalCost, team.cost, "team cost");
  eq(ts.totalEvents, BigInt(team.events));
  const gates = await a.client.getGateTimeseries({ productId: p, days: 7 });
  eq(
    gates.data.reduce((x, g) => [x[0]! + Number(g.softGates), x[1]! + Number(g.hardGates)], [0, 0]),
    [2, 1],
    "gates",
  );

  // A replica that never folded the day computes the same figures from the whole ledger.
  const fresh = await startInstance(db, { now: () => NOW });
  ctx.instances.push(fresh);
  await a.client.recordEvents({ usage: [repeat] });
  await fresh.module.rollPending();
  eq((await fresh.client.getSummary({ productId: p, days: 7 })).current, s);
});

t("the hour still filling takes only its new segments, and one repeating an earlier fact has the hour refolded whole", async (ctx) => {
  const db = ctx.client.db(freshDbName("analytics_roll_filling"));
  const a = await startInstance(db, { now: () => NOW });
  ctx.instances.push(a);
  const p = randomUUID();
  // NOW is 23:59:59: hour 23 is the hour still filling.
  const facts = (n: number, from: number) =>
    Array.from({ length: n }, (_, i) => usage(p, at(23, from + i), { userId: `u${i % 4}`, tokens: BigInt(1 + i), cost: (from + i + 1) / 100, ...(i % 2 === 0 && { teamId: "t1" }) }));
  const all: UsageInit[] = [];
  const roll = async (reads: number, what: string) => {
    ctx.segmentReads = 0;
    await a.module.rollPending();
    eq(ctx.segmentReads, reads, what);
    const want = totals(all);
    const s = (await a.client.getSummary({ productId: p, days: 7 })).current!;
    close(s.totalCost, want.cost, "cost");
    eq([s.totalTokens, s.totalEvents, s.activeUsers], [BigInt(want.tokens), BigInt(want.events), BigInt(want.users.size)]);
    const team = totals(all.filter((f) => f.teamId === "t1"));
    const ts = (await a.client.getSummary({ productId: p, days: 7, teamId: "t1" })).current!;
    close(ts.totalCost, team.cost, "team cost");
    eq(ts.totalEvents, BigInt(team.events));
    const gates = await a.client.getGateTimeseries({ productId: p, days: 7 });
    eq(gates.data.reduce((x, g) => [x[0]! + Number(g.softGates), x[1]! + Number(g.hardGates)], [0, 0]), [1, 1], "gates");
    return s;
  };
  const record = async (usage: UsageInit[], repeated: UsageInit[] = [], gates: ReturnType<typeof gate>[] = []) => {
    all.push(...usage);
    await a.client.recordEvents({ usage: [...usage, ...repeated], gates });
  };
  const soft = gate(p, at(23, 1), "soft_gate");
  const first = facts(20, 0);
  await record(first, [], [soft, gate(p, at(23, 2), "hard_gate")]);
  await a.module.rollPending();

  const second = facts(10, 20);
  await record(second);
  await roll(2, "the new segment and the read that finds none after it");
  // Repeating a fact the last roll took from a new segment: its key's hash was kept with the hour.
  await record(facts(5, 40), [second[3]!]);
  await roll(5, "the new segment, then the hour's three and the read past them");
  // Two segments before one roll, the second repeating a fact of the first: counted once, no refold.
  const fourth = facts(4, 50);
  await record(fourth);
  await record(facts(3, 55), [fourth[1]!]);
  await roll(3, "the two new segments and the read past them");
  // A gate stored again in another grouping.
  await record(facts(2, 60), [], [soft]);
  const s = await roll(8, "the new segment, then the hour's six and the read past them");

  // A replica that never folded the hour computes the same figures from the whole ledger.
  const fresh = await startInstance(db, { now: () => NOW });
  ctx.instances.push(fresh);
  await a.client.recordEvents({ usage: [first[0]!] });
  await fresh.module.rollPending();
  eq((await fresh.client.getSummary({ productId: p, days: 7 })).current, s);
});

t.run();
