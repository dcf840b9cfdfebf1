import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { create } from "@bufbuild/protobuf";
import type { MongoClient } from "mongodb";
import { IngestionService, UsageEventSchema, type UsageEvent } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcClient } from "@meter/lib/rpc";
import { toTimestamp } from "@meter/lib/time";
import { withTestStack, type TestStack } from "../../test/support/stack.ts";
import { killOnceStored, launchIngestion, type IngestionProcess } from "./testing/process.ts";

const t = suite<{ stack: TestStack; mongo: MongoClient }>("credits: ingestion killed mid-batch");

withTestStack(t);

const cents = (i: number) => ((i % 10) + 1) / 100;

/**
 * Sends `events` to `first` and kills it (SIGKILL) once the first of them is stored, then
 * starts another process on the same database and sends the batch again: the retry must
 * complete the killed request's job. Returns the second process (stopped by the caller).
 */
async function crashThenRetry(stack: TestStack, mongo: MongoClient, dbName: string, first: IngestionProcess, productId: string, events: UsageEvent[]) {
  const client = rpcClient(IngestionService, first.url);
  const stored = mongo.db(dbName).collection("usage_events");
  const inflight = client.ingestUsageEvents({ productId, events }).then(
    () => "completed",
    () => "failed",
  );
  await killOnceStored(first, stored, `${productId}/${events[0]!.id}`);
  assert.is(await inflight, "failed", "the request was cut off");
  const second = await launchIngestion(stack, dbName);
  const retry = rpcClient(IngestionService, second.url);
  const res = await retry.ingestUsageEvents({ productId, events }, { timeoutMs: 180_000 });
  assert.is(res.accepted + res.duplicates, events.length);
  return { second, retry, res };
}

t("SIGKILL while a batch of a prepaid user is written, restart, retry: the draw is neither lost nor doubled", async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  const plans = await api.post("/config/plans", { plans: [{ name: "prepaid", max_spend_per_period: 0, credits_enabled: true }] });
  assert.is(plans.status, 201, JSON.stringify(plans.body));
  await api.post("/users", { external_user_id: "victim" });
  const now = new Date();
  const sub = await api.post("/users/victim/subscription", {
    plan_id: plans.body.plans[0].id,
    period_start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
    period_end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
  });
  assert.is(sub.status, 200, JSON.stringify(sub.body));
  const dbName = `${stack.dbPrefix}_ingestion_proc`;
  const event = (i: number): UsageEvent =>
    create(UsageEventSchema, { id: randomUUID(), userId: "victim", timestamp: toTimestamp(now), model: "m", inputTokens: 1n, outputTokens: 1n, costTotal: cents(i) });
  const before = Array.from({ length: 100 }, (_, i) => event(i));
  const N = 5_000;
  const events = Array.from({ length: N }, (_, i) => event(i));
  // Whole cents, summed exactly: 100 x 0.055 before, 5,000 x 0.055 in the batch.
  const spentBefore = 5.5;
  const spent = spentBefore + 275;

  const first = await launchIngestion(stack, dbName);
  const client = rpcClient(IngestionService, first.url);
  await client.createCreditGrant({ productId, userId: "victim", grantId: "pay_1", amount: 1000 });
  // Drawn before the crash: a draw repeated from scratch would show here.
  await client.ingestUsageEvents({ productId, events: before });
  const drawn = await client.getCredits({ productId, userId: "victim" });
  assert.ok(Math.abs(drawn.balance - (1000 - spentBefore)) < 1e-9, `balance before the crash ${drawn.balance}`);

  const { second, retry, res } = await crashThenRetry(stack, mongo, dbName, first, productId, events);
  try {
    assert.ok(res.duplicates > 0, "the first attempt stored part of the batch");
    // The retry completes the killed request's job before it answers: exact at once.
    const credits = await retry.getCredits({ productId, userId: "victim" });
    assert.ok(Math.abs(credits.balance - (1000 - spent)) < 1e-9, `balance ${credits.balance} != ${1000 - spent}`);
    assert.is(credits.overdraft, 0);
    assert.ok(Math.abs(credits.grants[0]!.remaining - (1000 - spent)) < 1e-9);
    // Sent again: nothing more drawn.
    const again = await retry.ingestUsageEvents({ productId, events });
    assert.is(again.duplicates, N);
    const ledger = await retry.listCreditLedger({ productId, userId: "victim", limit: 200 });
    const usage = ledger.entries.filter((e) => e.type === "usage").reduce((s, e) => s + e.amount, 0);
    assert.ok(Math.abs(usage + spent) < 1e-9, `ledger usage ${usage} != -${spent}`);
    const session = await retry.getSession({ productId, userId: "victim" });
    assert.ok(Math.abs(session.currentUsage!.periodCost - spent) < 1e-9);
    const cap = session.limits.find((d) => d.reason === "total_spend")!;
    assert.ok(Math.abs(cap.max - 1000) < 1e-9, `the cap is allowance 0 + drawn + balance = 1000, not ${cap.max}`);
  } finally {
    await second.stop("SIGTERM");
  }
});

t("SIGKILL while a batch of a team's members is written, restart, retry: own credits first, then the team's pool, neither lost nor doubled", async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  const plans = await api.post("/config/plans", {
    plans: [
      { name: "own-prepaid", max_spend_per_period: 0, credits_enabled: true },
      { name: "team-prepaid", max_spend_per_period: 0, credits_enabled: true },
    ],
  });
  assert.is(plans.status, 201, JSON.stringify(plans.body));
  const now = new Date();
  const period = {
    period_start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
    period_end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
  };
  for (const u of ["own", "none"]) assert.is((await api.post("/users", { external_user_id: u })).status, 201);
  assert.is((await api.post("/users/own/subscription", { plan_id: plans.body.plans[0].id, ...period })).status, 200);
  assert.is((await api.post("/teams", { external_team_id: "acme", name: "Acme" })).status, 201);
  assert.is((await api.post("/teams/acme/subscription", { plan_id: plans.body.plans[1].id, ...period })).status, 200);
  for (const u of ["own", "none"]) assert.is((await api.request("PUT", `/users/${u}/team`, { body: { team_id: "acme" } })).status, 200);
  const dbName = `${stack.dbPrefix}_ingestion_team`;
  // After the joins: a member's usage counts for the team it was in at the usage's timestamp.
  const at = new Date();
  const event = (i: number): UsageEvent =>
    create(UsageEventSchema, { id: randomUUID(), userId: i % 2 === 0 ? "own" : "none", timestamp: toTimestamp(at), model: "m", inputTokens: 1n, outputTokens: 1n, costTotal: cents(i) });
  const N = 4_000;
  const events = Array.from({ length: N }, (_, i) => event(i));
  // Even i cost 0.01, 0.03, ..., 0.09 (mean 0.05), odd ones 0.02, ..., 0.10 (mean 0.06): 2,000 each.
  const ownSpent = 100;
  const noneSpent = 120;

  const first = await launchIngestion(stack, dbName);
  const client = rpcClient(IngestionService, first.url);
  await client.createCreditGrant({ productId, userId: "own", grantId: "own_1", amount: 40 });
  await client.createCreditGrant({ productId, userId: "", teamId: "acme", grantId: "pool_1", amount: 1000 });
  const { second, retry } = await crashThenRetry(stack, mongo, dbName, first, productId, events);
  try {
    await retry.ingestUsageEvents({ productId, events });
    const own = await retry.getCredits({ productId, userId: "own" });
    assert.ok(Math.abs(own.balance) < 1e-9 && own.overdraft === 0, `own credits spent first, nothing owed: ${own.balance} / ${own.overdraft}`);
    const pool = await retry.getCredits({ productId, userId: "", teamId: "acme" });
    const fromPool = ownSpent - 40 + noneSpent;
    assert.ok(Math.abs(pool.balance - (1000 - fromPool)) < 1e-9, `pool ${pool.balance} != ${1000 - fromPool}`);
    assert.is(pool.overdraft, 0);
    const ledger = await retry.listCreditLedger({ productId, userId: "", teamId: "acme", limit: 200 });
    const usage = ledger.entries.filter((e) => e.type === "usage").reduce((s, e) => s + e.amount, 0);
    assert.ok(Math.abs(usage + fromPool) < 1e-9, `pool ledger usage ${usage} != -${fromPool}`);
  } finally {
    await second.stop("SIGTERM");
  }
});

t.run();
