import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MongoClient } from "mongodb";
import { connectMongo } from "@meter/lib/mongo";
import { testMongoUrl } from "../../../test/support/database.ts";
import { CounterStore, counterId, sum, type CounterDelta } from "./counters.ts";

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

t.run();
