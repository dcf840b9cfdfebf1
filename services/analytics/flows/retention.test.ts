import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Db, MongoClient } from "mongodb";
import { AnalyticsService, type GateFactSchema, type UsageFactSchema } from "@meter/proto/meter/analytics/v1/analytics_pb";
import { createLogger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { rpcClient, serveRpc } from "@meter/lib/rpc";
import { DAY_MS, toTimestamp } from "@meter/lib/time";
import { testMongoUrl } from "../../../test/support/database.ts";
import { createAnalyticsService } from "../index.ts";
import { firstOpenDay, RETENTION_DEFAULTS } from "../domain/retention-policy.ts";
import { dayOf } from "../domain/windows.ts";

/**
 * A retention pass keeps every figure a query can return and removes what the policy says
 * goes: ledger days past the ledger window, rollups no window reaches, expired leases.
 */
const t = suite<{ mongo: MongoClient; db: Db }>("analytics retention");
const logger = createLogger("analytics-retention-test", "silent");
const NO_PEERS = { tenancy: "", plans: "", ingestion: "", analytics: "", webhooks: "" };
const NOW = new Date("2027-06-15T12:00:00.000Z");
const daysAgo = (n: number, hour = 10) => new Date(NOW.getTime() - n * DAY_MS + (hour - 12) * 3_600_000);

t.before(async (ctx) => {
  ctx.mongo = await connectMongo(await testMongoUrl());
  ctx.db = ctx.mongo.db(`analytics_retention_${Date.now()}_${Math.floor(Math.random() * 1e6)}`);
});

t.after(async (ctx) => {
  await ctx.mongo.close();
});

function usage(productId: string, at: Date, i: number): MessageInitShape<typeof UsageFactSchema> {
  return {
    productId,
    eventId: randomUUID(),
    userId: `u${i % 7}`,
    timestamp: toTimestamp(at),
    model: ["gpt-4o", "claude", ""][i % 3]!,
    tokens: BigInt(10 + i),
    cost: 0.01 * (1 + (i % 5)),
    source: i % 4 === 0 ? "manual" : "auto",
    toolCalls: 0n,
    // Two teams and users in none: frozen days keep each team's figures too.
    ...(i % 3 !== 2 && { teamId: `team|${i % 2}` }),
  };
}

function gate(productId: string, at: Date, i: number): MessageInitShape<typeof GateFactSchema> {
  const status = i % 2 ? "hard_gate" : "soft_gate";
  return { productId, eventId: randomUUID(), userId: `u${i % 7}`, timestamp: toTimestamp(at), status, blocked: status === "hard_gate", ...(i % 3 === 0 && { teamId: "team|0" }) };
}

t("figures are the same before and after a retention pass, and what should go is gone", async ({ db }) => {
  let clock = NOW;
  const module = await createAnalyticsService({ db, logger, peers: NO_PEERS, now: () => clock, rollIntervalMs: 0 });
  const server = await serveRpc({ modules: [module], port: 0, logger });
  const client = rpcClient(AnalyticsService, server.url);
  const p = randomUUID();
  try {
    // Each batch is recorded on the day it happened (the clock follows), as ingestion would.
    const seeded = [740, 400, 50, 45, 36, 20, 3, 0];
    for (const ago of seeded) {
      clock = daysAgo(ago, 23);
      const facts = Array.from({ length: 12 }, (_, i) => usage(p, daysAgo(ago, i), i));
      await client.recordEvents({ usage: facts, gates: [gate(p, daysAgo(ago, 5), ago), gate(p, daysAgo(ago, 6), ago + 1)] });
      // Part of the batch again in another grouping: stored twice, counted once.
      await client.recordEvents({ usage: facts.slice(3, 8) });
      await module.rollPending();
    }
    clock = NOW;
    // A roller that died holding a day left its lease behind.
    await db.collection("roll_leases").insertOne({ _id: `${p}|dead` as never, owner: "gone", until: daysAgo(2) });

    const figures = async () => ({
      summary: await client.getSummary({ productId: p, days: 365 }),
      manual: await client.getSummary({ productId: p, days: 60, filter: { source: "manual" } }),
      series: await client.getTimeseries({ productId: p, days: 60 }),
      gates: await client.getGateTimeseries({ productId: p, days: 60 }),
      breakdown: await client.getBreakdown({ productId: p, days: 365 }),
      top: await client.getTopUsers({ productId: p, days: 365, limit: 100 }),
      report: await client.getWindowReport({ productId: p, start: toTimestamp(daysAgo(60, 0)), end: toTimestamp(daysAgo(-1, 0)) }),
      teams: await client.getTopTeams({ productId: p, days: 365 }),
      ...Object.fromEntries(
        await Promise.all(
          ["team|0", "team|1"].map(async (teamId) => [
            teamId,
            {
              summary: await client.getSummary({ productId: p, days: 365, teamId }),
              series: await client.getTimeseries({ productId: p, days: 60, teamId }),
              gates: await client.getGateTimeseries({ productId: p, days: 60, teamId }),
              breakdown: await client.getBreakdown({ productId: p, days: 365, teamId }),
              top: await client.getTopUsers({ productId: p, days: 365, limit: 100, teamId }),
            },
          ]),
        ),
      ),
    });
    const before = await figures();
    assert.is(Number(before.summary.current!.totalEvents), 12 * 6, "every reachable day counted once");
    assert.is(Number(before.summary.previousPeriod!.totalEvents), 12, "the day 400 days ago is in the previous period");
    // Of each day's 12 facts, i = 0, 4, 6, 10 are team|0's, 1, 3, 7, 9 team|1's.
    // team|1 spends more a day (0.14 against 0.09).
    assert.equal(before.teams.teams.map((x: { teamId: string; events: bigint }) => [x.teamId, Number(x.events)]), [["team|1", 4 * 6], ["team|0", 4 * 6]]);
    assert.is(Number((before["team|1"] as { summary: typeof before.summary }).summary.current!.totalEvents), 4 * 6);

    const segments = db.collection("ledger_segments");
    const rollups = db.collection("day_rollups");
    assert.ok((await segments.countDocuments({ day: dayOf(daysAgo(50)) })) > 0);
    assert.ok((await rollups.countDocuments({ _id: `${p}|${dayOf(daysAgo(740))}` as never })) === 1);

    const report = await module.runRetention(NOW);
    const after = await figures();
    assert.equal(JSON.parse(JSON.stringify(after, big)), JSON.parse(JSON.stringify(before, big)), "every query answers the same");

    const open = firstOpenDay(NOW, RETENTION_DEFAULTS);
    const pruneBefore = dayOf(new Date(Date.parse(`${open}T00:00:00Z`) - DAY_MS));
    assert.is(await segments.countDocuments({ day: { $lt: pruneBefore } }), 0, "no ledger day past the window");
    assert.ok((await segments.countDocuments({ day: dayOf(daysAgo(20)) })) > 0, "ledger days inside the window kept");
    assert.is(await rollups.countDocuments({ _id: `${p}|${dayOf(daysAgo(740))}` as never }), 0, "rollup beyond any window deleted");
    assert.is(await db.collection("day_user_rollups").countDocuments({ day: dayOf(daysAgo(740)) }), 0);
    assert.is(await rollups.countDocuments({ _id: `${p}|${dayOf(daysAgo(400))}` as never }), 1, "rollups a window reaches kept");
    assert.is(await db.collection("roll_leases").countDocuments({}), 0, "expired lease swept");
    assert.is(await db.collection("dirty_days").countDocuments({}), 0, "no dirty mark left");
    // The day 740 days ago: the product's rollup, its two teams' and the teams' side by side.
    assert.ok(report.ledgerSegments > 0 && report.frozenDays === 4 && report.dayRollups === 4 && report.leases === 1, JSON.stringify(report));
    assert.is(await db.collection("day_bases").countDocuments({}), 4, "a base for each day whose ledger went (400, 50, 45, 36 days ago)");

    // A late fact for a final day is counted on top of its base, as one for an open day is;
    // the same fact again, in another grouping, is not.
    const lateFact = usage(p, daysAgo(45), 1);
    const late = await client.recordEvents({ usage: [lateFact] });
    assert.equal([late.recorded, late.duplicates], [1, 0]);
    await client.recordEvents({ usage: [usage(p, daysAgo(20), 1)] });
    await client.recordEvents({ usage: [lateFact, usage(p, daysAgo(45), 2)] });
    await module.rollPending();
    const last = await client.getSummary({ productId: p, days: 365 });
    assert.is(Number(last.current!.totalEvents), 12 * 6 + 3);
    const lastTeam = await client.getSummary({ productId: p, days: 365, teamId: "team|1" });
    assert.is(Number(lastTeam.current!.totalEvents), 4 * 6 + 2, "a frozen day keeps its teams' figures; the late fact counts for its team");
    const frozenDay = (await client.getTimeseries({ productId: p, days: 60, teamId: "team|1" })).data.find((d) => d.date === dayOf(daysAgo(45)))!;
    assert.is(Number(frozenDay.events), 4 + 1);
    assert.is(await segments.countDocuments({ day: dayOf(daysAgo(45)) }), 0, "the ledger keeps its window");

    // A fact for a day no rollup keeps is acknowledged and counted nowhere.
    const old = await client.recordEvents({ usage: [usage(p, daysAgo(731), 1)] });
    assert.equal([old.recorded, old.duplicates], [0, 1]);

    // A second pass finds nothing more to delete, and the late facts still count.
    assert.equal(await module.runRetention(NOW), { frozenDays: 0, ledgerSegments: 0, dayRollups: 0, lateSegments: 0, leases: 0, windowAnswers: 0 });
    assert.is(Number((await client.getSummary({ productId: p, days: 365 })).current!.totalEvents), 12 * 6 + 3);
  } finally {
    await server.close();
  }
});

t("a day frozen before bases existed takes its rollup as base on its first late fact", async ({ db }) => {
  let clock = daysAgo(100, 23);
  const module = await createAnalyticsService({ db, logger, peers: NO_PEERS, now: () => clock, rollIntervalMs: 0 });
  const server = await serveRpc({ modules: [module], port: 0, logger });
  const client = rpcClient(AnalyticsService, server.url);
  const p = randomUUID();
  try {
    await client.recordEvents({ usage: Array.from({ length: 9 }, (_, i) => usage(p, daysAgo(100, i), i)) });
    await module.rollPending();
    // What a retention pass without bases left: no ledger, no base, a rollup written
    // without late facts.
    await db.collection("ledger_segments").deleteMany({ product_id: p });
    await db.collection("day_rollups").updateOne({ _id: `${p}|${dayOf(daysAgo(100))}` as never }, { $unset: { with_late: "" } });
    clock = NOW;
    const before = await client.getSummary({ productId: p, days: 365 });
    assert.is(Number(before.current!.totalEvents), 9);
    const late = usage(p, daysAgo(100, 20), 3);
    await client.recordEvents({ usage: [late] });
    await module.rollPending();
    await client.recordEvents({ usage: [late, usage(p, daysAgo(100, 21), 4)] });
    await module.rollPending();
    const after = await client.getSummary({ productId: p, days: 365 });
    assert.is(Number(after.current!.totalEvents), 11, "the old rollup's 9 events and 2 late ones, each once");
    assert.is(after.current!.activeUsers, before.current!.activeUsers);
    assert.is(await db.collection("day_bases").countDocuments({ product_id: p }), 1);
  } finally {
    await server.close();
  }
});

const big = (_k: string, v: unknown) => (typeof v === "bigint" ? Number(v) : v);

t.run();
