// The relay's answer to its job (jobs/relay.ts): whether a round found work decides whether the
// next round comes within RELAY_INTERVAL_MS or after a longer pause (lib/src/jobs.ts, IdlePoll).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { MongoClient } from "mongodb";
import { Code, ConnectError } from "@connectrpc/connect";
import { createLogger } from "@meter/lib/logger";
import { freshDbName, withTestMongo } from "../../../test/support/database.ts";
import { entry as outboxEntry, OutboxStore, payloadsOf, WrittenEntries, type NewEntry, type OutboxEntry } from "../store/outbox.ts";
import { Relay } from "./outbox.ts";

const t = suite<{ mongo: MongoClient; url: string }>("ingestion relay rounds");
withTestMongo(t);

const entry = (id: string): NewEntry => ({ _id: `usage|${id}`, kind: "usage", payloads: JSON.stringify([{ id }]), count: 1, created_at: new Date() });

t("an entry is kept deflated, a fraction of its text, and reads back as written; one kept as text (written before) reads too", async ({ mongo }) => {
  const outbox = new OutboxStore(mongo.db(freshDbName("relay_deflated")));
  const facts = Array.from({ length: 1_000 }, (_, i) => ({ product_id: "p", event_id: `e-${i}`, user_id: `u-${i % 100}`, timestamp: new Date(Date.UTC(2026, 11, 6, 10, 0, i % 60)), model: "gpt-4o", total_tokens: 1_000 + i, cost_total: 0.001 * i, source: "sdk", tool_call_count: i % 3 }));
  const made = outboxEntry("usage", "job_deflated", facts);
  await outbox.put(outbox.webhooks, [made]);
  const kept = (await outbox.webhooks.findOne({ _id: made._id }))!;
  assert.is(kept.payloads, undefined, "no text beside it");
  assert.ok(kept.deflated!.length() * 4 < made.payloads.length, `${kept.deflated!.length()} bytes for ${made.payloads.length} characters`);
  assert.equal(payloadsOf(kept), facts);
  await outbox.webhooks.insertOne({ ...made, _id: "usage|job_text" });
  assert.equal(payloadsOf((await outbox.webhooks.findOne({ _id: "usage|job_text" }))!), facts);
});

t("a round finds work when it hands entries over or waits on a failing peer, and none when the outboxes are empty", async ({ mongo }) => {
  const outbox = new OutboxStore(mongo.db(freshDbName("relay_rounds")));
  let peerDown = false;
  const sent: unknown[] = [];
  const relay = new Relay(
    [
      {
        name: "analytics",
        collection: outbox.analytics,
        kind: "usage",
        async send(payloads) {
          if (peerDown) throw new ConnectError("down", Code.Unavailable);
          sent.push(...payloads);
        },
      },
    ],
    { intervalMs: 60_000, maxBackoffMs: 60_000, batchSize: 10, maxAttempts: 3, logger: createLogger("relay-rounds-test", "silent") },
  );
  assert.is(await relay.round(), false, "empty outboxes: nothing found");
  await outbox.analytics.insertOne(entry("a"));
  assert.is(await relay.round(), true, "an entry handed over");
  assert.is(sent.length, 1);
  assert.is(await relay.round(), false, "empty again");
  peerDown = true;
  await outbox.analytics.insertOne(entry("b"));
  assert.is(await relay.round(), true, "the peer failed: the entry waits");
  assert.is(await relay.round(), true, "the outbox waits for its retry: still work");
  assert.is(await outbox.analytics.countDocuments(), 1, "nothing lost");
});

t("an outbox's own batch size bounds its calls, others keep the relay's", async ({ mongo }) => {
  const outbox = new OutboxStore(mongo.db(freshDbName("relay_batches")));
  const calls: Record<string, number[]> = { analytics: [], webhooks: [] };
  const box = (name: "analytics" | "webhooks", batchSize?: number) => ({
    name,
    collection: outbox[name],
    kind: "usage" as const,
    batchSize,
    async send(payloads: unknown[]) {
      calls[name]!.push(payloads.length);
    },
  });
  const relay = new Relay([box("analytics", 1_000), box("webhooks")], {
    intervalMs: 60_000,
    maxBackoffMs: 60_000,
    batchSize: 10,
    maxAttempts: 3,
    logger: createLogger("relay-batches-test", "silent"),
  });
  const big = (id: string): OutboxEntry => ({ ...entry(id), payloads: JSON.stringify(Array.from({ length: 2_500 }, (_, i) => ({ id: `${id}-${i}` }))), count: 2_500 });
  await outbox.analytics.insertOne(big("a"));
  await outbox.webhooks.insertOne({ ...entry("w"), payloads: JSON.stringify(Array.from({ length: 25 }, (_, i) => ({ id: `w-${i}` }))), count: 25 });
  assert.is(await relay.round(), true);
  assert.equal(calls, { analytics: [1_000, 1_000, 500], webhooks: [10, 10, 5] });
});

t("entries that fit in one call go together; a refused call is sent again entry by entry and charges only the entry that caused it", async ({ mongo }) => {
  const outbox = new OutboxStore(mongo.db(freshDbName("relay_groups")));
  const calls: string[][] = [];
  const relay = new Relay(
    [
      {
        name: "analytics",
        collection: outbox.analytics,
        kind: "usage",
        async send(payloads) {
          const ids = payloads.map((p) => String(p.id));
          calls.push(ids);
          if (ids.includes("bad")) throw new ConnectError("refused", Code.InvalidArgument);
        },
      },
    ],
    { intervalMs: 60_000, maxBackoffMs: 60_000, batchSize: 4, maxAttempts: 3, logger: createLogger("relay-groups-test", "silent") },
  );
  for (const id of ["a", "b", "c"]) await outbox.analytics.insertOne(entry(id));
  assert.is(await relay.round(), true);
  assert.equal(calls.map((c) => [...c].sort()), [["a", "b", "c"]], "three entries, one call");
  assert.is(await outbox.analytics.countDocuments(), 0, "all three deleted");

  calls.length = 0;
  for (const id of ["d", "bad", "e", "f", "g"]) await outbox.analytics.insertOne(entry(id));
  await relay.round();
  assert.is(calls[0]!.length, 4, "four fit in a call");
  assert.ok(calls[0]!.includes("bad"), "the refused call held the bad entry");
  const delivered = new Set(calls.filter((c) => !c.includes("bad")).flat());
  assert.equal([...delivered].sort(), ["d", "e", "f", "g"], "every other entry delivered, alone or together");
  const left = await outbox.analytics.find().toArray();
  assert.equal(left.map((e) => e._id), ["usage|bad"], "only the refused entry waits");
  assert.is(left[0]!.attempts, 1, "its attempt counted, once");
});

t("entries this process wrote are sent as written, without a read; others are found by the scan; each delivered once", async ({ url }) => {
  // Command monitoring counts the entries read back by id.
  const client = new MongoClient(url, { monitorCommands: true });
  await client.connect();
  const readBack: string[] = [];
  client.on("commandStarted", (e) => {
    if (e.commandName === "find" && e.command.find === "outbox_analytics" && typeof e.command.filter?._id === "string") readBack.push(e.command.filter._id);
  });
  try {
    const name = freshDbName("relay_written");
    const mine = new OutboxStore(client.db(name));
    // Another process's store on the same database: what it wrote this process does not hold.
    const other = new OutboxStore(client.db(name));
    const delivered: string[] = [];
    let failing = true;
    const relay = new Relay(
      [
        {
          name: "analytics",
          collection: mine.analytics,
          written: mine.analyticsWritten,
          kind: "usage",
          async send(payloads) {
            if (failing) throw new ConnectError("peer down", Code.Unavailable);
            delivered.push(...payloads.map((p) => String(p.id)));
          },
        },
      ],
      { intervalMs: 0, maxBackoffMs: 0, batchSize: 100, maxAttempts: 3, logger: createLogger("relay-written-test", "silent") },
    );
    await mine.put(mine.analytics, [entry("a1"), entry("a2")]);
    await other.put(other.analytics, [entry("b1")]);
    // The peer is down: what was taken as written stays in the collection, and the next round finds it there.
    assert.is(await relay.round(), true);
    assert.equal(delivered, []);
    failing = false;
    await relay.round();
    assert.equal([...delivered].sort(), ["a1", "a2", "b1"]);
    assert.equal(readBack.sort(), ["usage|a1", "usage|a2", "usage|b1"], "read back after the failed round");
    readBack.length = 0;
    delivered.length = 0;
    await mine.put(mine.analytics, [entry("a3"), entry("a4")]);
    await other.put(other.analytics, [entry("b2")]);
    await relay.round();
    assert.equal([...delivered].sort(), ["a3", "a4", "b2"], "each once");
    assert.equal(readBack, ["usage|b2"], "only the other process's entry read back");
    assert.is(await mine.analytics.countDocuments(), 0, "all deleted");
    // An entry that was there already (a job completed again) is not held: the collection's copy goes, once.
    readBack.length = 0;
    delivered.length = 0;
    await other.put(other.analytics, [entry("c1")]);
    await mine.put(mine.analytics, [entry("c1")]);
    await relay.round();
    assert.equal(delivered, ["c1"]);
    assert.equal(readBack, ["usage|c1"]);
  } finally {
    await client.close();
  }
});

t("a written entry is passed by from before its insert, and taken only once its insert landed", () => {
  const w = new WrittenEntries();
  const [a, b] = [entry("w1"), entry("w2")];
  w.add([a, b]);
  assert.equal(w.ids("usage"), [a._id, b._id], "the scan passes both by");
  assert.equal(w.take("usage", 10), [], "neither taken before its insert");
  // w1 inserted; w2 was there already (or its insert failed): left to the collection.
  w.stored([a, b], new Set([a._id]));
  assert.equal(w.ids("usage"), [a._id]);
  assert.equal(w.take("gate", 10), [], "only its own kind");
  assert.equal(w.take("usage", 10), [a]);
  assert.equal(w.ids("usage"), [], "taken entries are no longer held");
});

t.run();
