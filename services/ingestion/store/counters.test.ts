import { suite } from "uvu";
import * as assert from "uvu/assert";
import { MongoClient } from "mongodb";
import { connectMongo } from "@meter/lib/mongo";
import { testMongoUrl } from "../../../test/support/database.ts";
import { CounterStore } from "./counters.ts";
import { counterId } from "../domain/counter-ids.ts";
import { sum } from "../domain/totals.ts";
import type { CounterDelta } from "../domain/counter-delta.ts";

// A job's counter updates go as one update command of many statements; a repeat of the job
// (a retry, a takeover after a crash) must change nothing, also when the first attempt applied
// only part of them.
const t = suite<{ mongo: MongoClient; store: CounterStore }>("counter store");

const start = new Date("2026-01-01T00:00:00Z");
const end = new Date("2026-02-01T00:00:00Z");

function delta(user: number, tokens: number): CounterDelta {
  const add = sum([{ product_id: "p", user_id: `u${user}`, model: "gpt-4o", total_tokens: tokens, cost_total: tokens / 1000, tool_call_count: 0 }]);
  return { id: counterId("p", `u${user}`, start), productId: "p", userId: `u${user}`, start, end, add };
}

t.before(async (ctx) => {
  ctx.mongo = await connectMongo(await testMongoUrl());
  ctx.store = new CounterStore(ctx.mongo.db(`counters_${Date.now()}`));
});
t.after(async (ctx) => {
  await ctx.mongo.close();
});

t("a job adds each of its deltas once, even when repeated after a partial first attempt", async ({ store }) => {
  // 250 counters: more than one command's worth of statements.
  const deltas = Array.from({ length: 250 }, (_, u) => delta(u, 10 + u));
  await store.add("job-a", deltas.slice(0, 40), new Set()); // the first attempt stopped after 40
  await store.add("job-a", deltas, new Set()); // the repeat: the 40 collide, the rest apply
  await store.add("job-a", deltas, new Set()); // and again: nothing changes
  const docs = await store.counters.find({ _id: { $in: deltas.map((d) => d.id) } }).toArray();
  assert.is(docs.length, 250);
  for (const d of docs) {
    const u = Number(d.user_id.slice(1));
    assert.is(d.tokens, 10 + u, `counter of ${d.user_id}`);
    assert.is(d.events, 1);
  }
  // Another job adds again, and reads back the counters it asked for.
  const read = new Set([deltas[3]!.id]);
  const after = await store.add("job-b", deltas.slice(0, 5), read);
  assert.is(after.get(deltas[3]!.id)?.tokens, 2 * 13);
  assert.equal([...after.keys()], [deltas[3]!.id], "only the counters asked for are returned");
  assert.is((await store.get(deltas[4]!.id))?.tokens, 2 * 14);
});

const costDelta = (user: string, costs: number[], model = "m"): CounterDelta => ({
  id: counterId("p", user, start),
  productId: "p",
  userId: user,
  start,
  end,
  add: sum(costs.map((cost_total) => ({ product_id: "p", user_id: user, model, total_tokens: 1, cost_total, tool_call_count: 0 }))),
});

t("money is added as whole nano-dollars, exactly, also past 2^31 of them", async ({ store }) => {
  const d = costDelta("money", Array.from({ length: 1000 }, () => 0.00125));
  assert.is(d.add.cost, 1_250_000_000);
  await store.add("job-m1", [d], new Set());
  // $2 a job: 2e9 n$ fits an int32, the sums do not; the counter must not wrap (the embedded
  // database adds int32s in 32 bits) or round.
  await store.add("job-m2", [costDelta("money", [2])], new Set());
  await store.add("job-m3", [costDelta("money", [2])], new Set());
  const doc = (await store.get(d.id))!;
  assert.is(doc.cost, 5_250_000_000);
  assert.equal({ ...doc.cost_by_model }, { m: 5_250_000_000 });
  const raw = (await store.counters.findOne({ _id: d.id }))!;
  assert.is(raw.cost_nano, 5_250_000_000);
  assert.is(raw.cost, undefined, "nothing is written to the float field of old counters");
});

t("a counter written with float dollars reads them once converted, and goes on exactly", async ({ store }) => {
  const id = counterId("p", "legacy", start);
  await store.counters.insertOne({
    _id: id, product_id: "p", user_id: "legacy", period_start: start, period_end: end, jobs: {},
    cost: 0.1 + 0.2, tokens: 2, tool_calls: 0, events: 2, tokens_by_model: { m: 2 }, cost_by_model: { m: 0.1 + 0.2 },
    month: { cost: 0.30000000000000004, tokens: 2, tool_calls: 0, events: 2, tokens_by_model: { m: 2 }, cost_by_model: { m: 0.30000000000000004 } },
  });
  await store.add("job-l1", [costDelta("legacy", [0.00125])], new Set());
  const doc = (await store.get(id))!;
  assert.is(doc.cost, 301_250_000, "the float's nano-dollars plus the integer's");
  assert.equal({ ...doc.cost_by_model }, { m: 301_250_000 });
  assert.is(doc.month?.cost, 300_000_000);
  assert.is(doc.events, 3);
  // Model names are the caller's: one named like an Object property reads as its own figure.
  const odd = counterId("p", "legacy-odd", start);
  await store.counters.insertOne({
    _id: odd, product_id: "p", user_id: "legacy-odd", period_start: start, period_end: end, jobs: {},
    cost: 1.5, tokens: 0, tool_calls: 0, events: 1, cost_by_model: { constructor: 1.5 }, cost_nano_by_model: { m: 7 },
  });
  const read = (await store.get(odd))!;
  assert.equal({ ...read.cost_by_model }, { m: 7, constructor: 1_500_000_000 });
  assert.equal(read.tokens_by_model, {}, "no model counted yet: an empty map");
});

t("window entries in a counter: a job adds them once, and the next update by the same process removes those that ended", async ({ store }) => {
  const windowed = (key: string, end: number, n: number): CounterDelta => ({ ...costDelta("windowed", [0.001]), windows: new Map([[key, { key, end, n }]]) });
  const hour = Date.parse("2026-01-05T10:00:00Z");
  const first = windowed(`spend:hour::|${hour}`, hour + 3_600_000, 5);
  await store.add("job-w1", [first], new Set(), new Date(hour + 60_000));
  await store.add("job-w1", [first], new Set(), new Date(hour + 60_000)); // a repeat changes nothing
  await store.add("job-w2", [first], new Set(), new Date(hour + 120_000));
  assert.equal((await store.get(first.id))?.w, { [`spend:hour::|${hour}`]: { n: 10, e: hour + 3_600_000 } });
  // The next hour: its entry is added and the ended one goes in the same update.
  const next = windowed(`spend:hour::|${hour + 3_600_000}`, hour + 7_200_000, 3);
  await store.add("job-w3", [next], new Set(), new Date(hour + 3_660_000));
  assert.equal((await store.get(first.id))?.w, { [`spend:hour::|${hour + 3_600_000}`]: { n: 3, e: hour + 7_200_000 } });
  assert.is((await store.get(first.id))?.events, 3, "three jobs, each once");
});

t("concurrent jobs share rounds and each counts once: a repeat in the same round, a retry of a job already added", async ({ store }) => {
  const users = Array.from({ length: 30 }, (_, u) => 1000 + u);
  const job = (n: number) => users.map((u) => delta(u, n));
  await store.add("job-r0", job(1), new Set());
  // Twelve jobs at once, one of them asked twice and one a retry of job-r0 (already added): the
  // first runs alone, the others wait for it and go together in the next round.
  const read = new Set([job(0)[0]!.id]);
  const answers = await Promise.all([
    ...Array.from({ length: 10 }, (_, i) => store.add(`job-r${i + 1}`, job(i + 1 + 1), read)),
    store.add("job-r5", job(6), read),
    store.add("job-r0", job(1), read),
  ]);
  const expected = 1 + Array.from({ length: 10 }, (_, i) => i + 2).reduce((a, b) => a + b, 0);
  for (const u of users) {
    const c = (await store.get(delta(u, 0).id))!;
    assert.is(c.tokens, expected, `counter of u${u}`);
    assert.is(c.events, 11);
  }
  // Each job reads its counter as its addition left it or later: never less than its own share added.
  for (const a of answers) assert.ok((a.get(job(0)[0]!.id)?.tokens ?? 0) >= 1 + 2, "read after the addition");
});

t("a round waits for the jobs on their way and adds them with it, one statement a counter; a job that never comes holds it only a moment", async () => {
  // Command monitoring counts the update commands the store sends.
  const client = new MongoClient(await testMongoUrl(), { monitorCommands: true });
  await client.connect();
  const updates: number[] = [];
  client.on("commandStarted", (e) => {
    if (e.commandName === "update" && e.command.update === "counters") updates.push((e.command.updates as unknown[]).length);
  });
  try {
    const store = new CounterStore(client.db(`counters_gather_${Date.now()}`));
    const users = Array.from({ length: 20 }, (_, u) => 2000 + u);
    const job = (n: number) => users.map((u) => delta(u, n));
    store.expect("job-g2");
    store.expect("job-g3");
    const first = store.add("job-g1", job(1), new Set());
    // The others arrive while the first waits for them.
    await new Promise((r) => setImmediate(r));
    const rest = [store.add("job-g2", job(2), new Set()), store.add("job-g3", job(3), new Set())];
    await Promise.all([first, ...rest]);
    assert.equal(updates, [20], "one round, one statement a counter for the three jobs");
    for (const u of users) assert.is((await store.get(delta(u, 0).id))!.tokens, 6, `counter of u${u}`);

    // A job expected but never coming (it failed before adding): the round goes on after a moment.
    store.expect("job-gone");
    await store.add("job-g4", job(4), new Set());
    assert.is((await store.get(delta(users[0]!, 0).id))!.tokens, 10);
    store.arrived("job-gone");
  } finally {
    await client.close();
  }
});

t.run();
