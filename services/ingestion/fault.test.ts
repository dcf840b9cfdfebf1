import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { create } from "@bufbuild/protobuf";
import type { MongoClient } from "mongodb";
import { IngestionService, UsageEventSchema, type UsageEvent } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { rpcClient } from "@meter/lib/rpc";
import { toTimestamp } from "@meter/lib/time";
import { testMongoUrl } from "../../test/support/database.ts";
import { withTestStack, type TestStack } from "../../test/support/stack.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** The ingestion service as its own process (split mode); resolves with its gRPC URL once listening. */
async function launch(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "services/ingestion/main.ts"], {
    cwd: root,
    env: { ...process.env, ...env, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (line) => {
      try {
        const rec = JSON.parse(line);
        if (rec.msg === "ingestion service listening") resolve(`http://127.0.0.1:${rec.port}`);
      } catch {
        // not a log line
      }
    });
    child.once("exit", (code) => reject(new Error(`ingestion exited early (${code})`)));
  });
  return { child, url };
}

const t = suite<{ stack: TestStack; mongo: MongoClient }>("ingestion killed mid-batch");

withTestStack(t);

t("SIGKILL while a large batch of a team member is written, restart, retry: the member's and the team's totals exact, nothing lost or doubled", async ({ stack, mongo }) => {
  const { api, productId } = await stack.newProduct();
  await api.post("/users", { external_user_id: "victim" });
  // A member of a team: the team must count exactly what its member counts.
  const plan = (await api.post("/config/plans", { plans: [{ name: "open" }] })).body.plans[0];
  await api.post("/teams", { external_team_id: "crew", name: "Crew" });
  await api.post("/teams/crew/subscription", { plan_id: plan.id });
  assert.is((await api.request("PUT", "/users/victim/team", { body: { team_id: "crew" } })).status, 200);
  const dbName = `${stack.dbPrefix}_ingestion_proc`;
  const env = {
    MONGODB_URL: await testMongoUrl(),
    MONGODB_DB: dbName,
    TENANCY_URL: stack.rpcUrl,
    PLANS_URL: stack.rpcUrl,
    INGESTION_URL: stack.rpcUrl,
    // Peers that are down: handovers wait in the outbox, which must not slow ingestion.
    ANALYTICS_URL: "http://127.0.0.1:9",
    WEBHOOKS_URL: "http://127.0.0.1:9",
    RELAY_INTERVAL_MS: "200",
    // Long enough that neither the sweep nor the age rule can be what completes the killed job.
    RECOVERY_AFTER_MS: "600000",
  };
  const now = new Date();
  const N = 10_000;
  const events: UsageEvent[] = Array.from({ length: N }, (_, i) =>
    create(UsageEventSchema, {
      id: randomUUID(),
      userId: "victim",
      timestamp: toTimestamp(now),
      model: `m${i % 3}`,
      inputTokens: BigInt(i % 7),
      outputTokens: BigInt(i % 5),
      costTotal: (i % 10) / 100,
      toolCalls: i % 4 === 0 ? ["search"] : [],
    }),
  );
  const expected = { tokens: 0, cost: 0, tools: 0 };
  events.forEach((e, i) => {
    expected.tokens += (i % 7) + (i % 5);
    expected.cost += (i % 10) / 100;
    expected.tools += i % 4 === 0 ? 1 : 0;
  });

  const log = (m: string) => process.env.FAULT_DEBUG && console.error(`[fault] ${m}`);
  log("launching");
  const first = await launch(env);
  log(`launched ${first.url}`);
  const stored = mongo.db(dbName).collection("usage_events");
  const client = rpcClient(IngestionService, first.url);
  const inflight = client.ingestUsageEvents({ productId, events }).then(
    () => "completed",
    () => "failed",
  );
  // Kill as soon as the first event is in the database, i.e. in the middle of the write.
  // (A point read: polling with a scan would starve the writer on the embedded database.)
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && !(await stored.findOne({ _id: `${productId}/${events[0]!.id}` as never }))) {
    await new Promise((r) => setTimeout(r, 5));
  }
  log("killing");
  first.child.kill("SIGKILL");
  await new Promise((r) => first.child.once("exit", r));
  assert.is(await inflight, "failed", "the request was cut off");
  const seenAtKill = await stored.countDocuments({ product_id: productId });
  assert.ok(seenAtKill > 0, "the first attempt stored events before it died");

  log(`killed; ${seenAtKill} stored`);
  const second = await launch(env);
  log("relaunched");
  try {
    const retryClient = rpcClient(IngestionService, second.url);
    const res = await retryClient.ingestUsageEvents({ productId, events }, { timeoutMs: 180_000 });
    log(`retried ${JSON.stringify(res)}`);
    assert.is(res.accepted + res.duplicates, N);
    assert.ok(res.duplicates > 0, "the first attempt stored part of the batch");
    assert.is(await stored.countDocuments({ product_id: productId }), N);

    const read = async () => {
      const period = await retryClient.getUsage({ productId, userId: "victim", period: "current_period" });
      const month = await retryClient.getUsage({ productId, userId: "victim", period: "current_month" });
      const session = await retryClient.getSession({ productId, userId: "victim" });
      return { period, month, session };
    };
    // Read at once, no waiting: the retry covers every id the killed request offered, so it
    // completes that request's job before it returns.
    const last = await read();
    for (const u of [last.period, last.month]) {
      assert.is(Number(u.totalTokens), expected.tokens);
      assert.ok(Math.abs(u.totalCost - expected.cost) < 1e-6, `${u.totalCost} != ${expected.cost}`);
      assert.is(Number(u.toolCallsCount), expected.tools);
    }
    assert.is(Number(last.session.currentUsage!.periodTokensTotal), expected.tokens);
    assert.ok(Math.abs(last.session.currentUsage!.periodCost - expected.cost) < 1e-6);
    assert.is(Number(last.session.team!.currentUsage!.periodTokensTotal), expected.tokens, "the team counted each event once");
    const team = await retryClient.getTeamUsage({ productId, teamId: "crew", period: "current_month" });
    assert.equal([Number(team.totalTokens), Number(team.toolCallsCount)], [expected.tokens, expected.tools]);
    assert.ok(Math.abs(team.totalCost - expected.cost) < 1e-6, `${team.totalCost} != ${expected.cost}`);
    // And they stay exact: no write job is left open to add anything twice.
    assert.is(await mongo.db(dbName).collection("jobs").countDocuments({}), 0);
    const again = await read();
    assert.is(Number(again.period.totalTokens), expected.tokens);
    // A calendar-month period: one counter, carrying the month's share too. Its guard holds
    // at most the two requests' entries (both jobs are closed; entries go with later updates).
    const counters = await mongo.db(dbName).collection("counters").find({ product_id: productId }).toArray();
    assert.is(counters.length, 1, "the period counter, holding the month's share");
    assert.is(counters[0]!.month.tokens, expected.tokens);
    assert.ok(Object.keys(counters[0]!.jobs).length <= 2);
  } finally {
    second.child.kill("SIGTERM");
    await new Promise((r) => second.child.once("exit", r));
  }
});

t.run();
