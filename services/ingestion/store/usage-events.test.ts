import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MongoClient } from "mongodb";
import { connectMongo } from "@meter/lib/mongo";
import { testMongoUrl } from "../../../test/support/database.ts";
import { compact, expand, UsageEventStore, type UsageEventDoc } from "./usage-events.ts";

// Stored events leave out the fields their reader rebuilds; every read must give back the
// document exactly as it was built, whatever values it held.
const t = suite<{ mongo: MongoClient; store: UsageEventStore }>("usage event store");

const at = new Date("2026-03-01T12:00:00Z");

function event(over: Partial<UsageEventDoc> = {}): UsageEventDoc {
  return {
    _id: "p1/e1",
    product_id: "p1",
    event_id: "e1",
    user_id: "u1",
    user_known: true,
    session_id: null,
    timestamp: at,
    model: "gpt-4o",
    input_tokens: 120,
    output_tokens: 30,
    total_tokens: 150,
    tool_calls: [],
    tool_call_count: 0,
    cost_tokens: 0.000123,
    cost_tools: 0,
    cost_total: 0.000123,
    metadata: "{}",
    source: "auto",
    description: null,
    job: "job_1",
    counter_id: "p1|1772323200000|u1",
    period_start: new Date("2026-03-01T00:00:00Z"),
    period_end: new Date("2026-04-01T00:00:00Z"),
    plan_name: null,
    spend_limit: null,
    received_at: at,
    lease_id: null,
    ...over,
  };
}

const shares = [
  { key: "spend:day:x|1772323200000", end: 1772409600000, n: 1230 },
  { key: "team:t1:requests:rolling:60|1772366400000", end: 1772370000000, n: 1 },
];
const team = {
  id: "t1",
  counter_id: "p1|1772323200000|t1",
  period_start: new Date("2026-03-01T00:00:00Z"),
  period_end: new Date("2026-04-01T00:00:00Z"),
  plan_name: "team",
  spend_limit: 500,
  credits: { team_id: "acme", allowance: 500, low_at: null, direct: true as const },
  windows: [{ key: "spend:month:x|1772323200000", end: 1775001600000, n: 1230 }],
};

/** Documents with every left-out field at another value than the one rebuilt. */
const unusual: [string, Partial<UsageEventDoc>][] = [
  ["a manual event under an idempotency key", { _id: "p1/idem/5f2c", event_id: "evt_9", source: "manual", description: "seats" }],
  ["a stranger in a session, with tool calls", { user_known: false, session_id: "s1", tool_calls: ["search", "fetch"], tool_call_count: 2 }],
  ["totals sent by the client", { total_tokens: 999, cost_tools: 0.02, cost_total: 5 }],
  ["costs whose sum is rounded to the nano-dollar", { cost_tokens: 0.1, cost_tools: 0.2, cost_total: 0.3 }],
  ["a plan, a lease and metadata", { plan_name: "pro", spend_limit: 20, lease_id: "h_1", metadata: '{"route":"/chat"}' }],
  ["a team member's event with windows", { windows: shares, team, team_id: "acme" }],
];

t("a usual event is stored without the fields it implies, and read back whole", () => {
  const d = event();
  const stored = compact(d);
  for (const f of ["event_id", "user_known", "session_id", "tool_calls", "tool_call_count", "total_tokens", "cost_tools", "cost_total", "metadata", "source", "description", "plan_name", "spend_limit", "lease_id"]) {
    assert.not.ok(f in stored, `${f} left out`);
  }
  assert.equal(expand(stored), d);
});

t("an event's windows and team part are stored as text, and read back with their dates", () => {
  const d = event({ windows: shares, team });
  const stored = compact(d);
  assert.type(stored.windows, "string");
  assert.type(stored.team, "string");
  const back = expand(stored);
  assert.equal(back, d);
  assert.instance(back.team!.period_start, Date);
});

for (const [what, over] of unusual) {
  t(`${what}: every value is read back as written`, () => {
    const d = event(over);
    assert.equal(expand(compact(d)), d);
  });
}

t("through the database: inserted, read by id, by id list and by job, as built", async ({ store }) => {
  const docs = [event(), ...unusual.map(([, over], i) => event({ ...over, _id: `${over._id ?? "p1/e1"}-${i}`, event_id: over.event_id ?? `e1-${i}` }))];
  const inserted = await store.insertNew(docs);
  assert.is(inserted.size, docs.length);
  assert.equal(await store.get(docs[0]!._id), docs[0]);
  const byId = new Map((await store.getMany(docs.map((d) => d._id))).map((d) => [d._id, d]));
  for (const d of docs) assert.equal(byId.get(d._id), d);
  const ofJob = await store.ofJob({ _id: "job_1", ids: docs.map((d) => d._id) });
  assert.is(ofJob.length, docs.length);
  // Stored before the fields were left out: read as it is.
  const whole = event({ _id: "p1/whole", event_id: "whole", windows: shares, team });
  await store.events.insertOne(whole);
  assert.equal(await store.get("p1/whole"), whole);
});

t.before(async (ctx) => {
  ctx.mongo = await connectMongo(await testMongoUrl());
  ctx.store = new UsageEventStore(ctx.mongo.db(`usage_events_${Date.now()}`));
});
t.after(async ({ mongo }) => {
  await mongo.close();
});

t.run();
