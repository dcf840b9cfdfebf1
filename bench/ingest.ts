// `npm run bench:ingest`: usage-event ingestion through the REST gateway, all-in-one and split,
// against writing the same documents straight into the database with insertMany.
// Prints events per second and p50/p99 batch latency for each, and the ratio to insertMany.
//   BENCH_EVENTS=200000 BENCH_BATCH=1000 BENCH_CONCURRENCY=4 BENCH_USERS=100 BENCH_MODES=raw,all-in-one,split npm run bench:ingest
// Mode `replicas`: the all-in-one stack plus a second ingestion module (its own gRPC server,
// fresh process state) on the same database, behind one gateway that sends each batch to one
// of the two by its first event id; prints per-batch latency per replica. With
// BENCH_USERS=1000 and BENCH_BATCH=1000 every batch touches 1,000 users:
//   BENCH_MODES=replicas BENCH_USERS=1000 BENCH_EVENTS=50000 npm run bench:ingest
// Mode `overload`: BENCH_SENDERS senders (24) post batches of BENCH_BATCH without pause for
// BENCH_SECONDS (20), as the client libraries do (the same batch again after a 429 or 503,
// waiting Retry-After plus jitter, or after their 10 s request timeout), then stop sending:
// each takes the answer to the request it has out, and sends nothing more. Prints how long
// the service goes on storing after they stopped, for each bound on the events a replica holds (BENCH_BOUNDS, INGESTION_MAX_EVENTS_IN_FLIGHT
// values, 0: none), alternated over BENCH_ROUNDS rounds:
//   BENCH_MODES=overload BENCH_BOUNDS=0,10000 BENCH_ROUNDS=3 npm run bench:ingest
// The all-in-one runs as its own process, as `npm start` runs it (BENCH_AIO_IN_PROCESS=1: in
// the bench's process; BENCH_AIO_NODE_OPTIONS: its NODE_OPTIONS, to profile it).
// Uses MONGODB_URL when set, else the embedded database in a temporary directory.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Client } from "@connectrpc/connect";
import { buildGateway } from "@meter/gateway";
import { connectClients } from "@meter/gateway/clients";
import { createIngestionService } from "@meter/ingestion";
import { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { listenRpc, rpcClient } from "@meter/lib/rpc";
import { createLogger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { ingestedEvents, ingestionInFlight } from "@meter/lib/metrics";
import { MeterApiError } from "../sdk/typescript/src/errors.ts";
import { backoffMs } from "../sdk/typescript/src/transport.ts";
import { startStack } from "../cmd/stack.ts";
import { Api } from "../test/support/http.ts";
import { freePort, freePortRange, startAllInOne } from "../test/support/processes.ts";
import { benchDatabase } from "./support/database.ts";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 200_000);
const BATCH = Number(process.env.BENCH_BATCH ?? 1_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
const USERS = Number(process.env.BENCH_USERS ?? 100);
const MODELS = ["gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet", "o1"];
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const database = await benchDatabase("ingest");
const mongoUrl = database.url;
const logger = createLogger("bench", "warn");

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

function event(i: number) {
  const input = 100 + (i % 900);
  const output = 20 + (i % 300);
  return {
    id: randomUUID(),
    user_id: `user-${i % USERS}`,
    session_id: `s-${i % 1000}`,
    timestamp: new Date().toISOString(),
    model: MODELS[i % MODELS.length],
    input_tokens: input,
    output_tokens: output,
    tool_calls: i % 5 === 0 ? ["search"] : [],
    cost_tokens: input * 0.0000025 + output * 0.00001,
    cost_tools: i % 5 === 0 ? 0.02 : 0,
    metadata: { route: "/chat" },
  };
}

interface Result {
  mode: string;
  events: number;
  seconds: number;
  p50: number;
  p99: number;
  /** Batch latencies by the replica that answered (replicas mode). */
  byReplica?: Map<string, number[]>;
}

/** Which of two ingestion replicas takes a batch: decided by its first event id, so the bench can tell too. */
function replicaOf(firstEventId: string | undefined): 0 | 1 {
  return firstEventId && parseInt(firstEventId.slice(-1), 16) % 2 === 1 ? 1 : 0;
}

/** Runs `send` for every batch of EVENTS, CONCURRENCY at a time; wall time and batch latencies. */
async function timedBatches(send: (batch: number, events: ReturnType<typeof event>[]) => Promise<void>) {
  const batches = Math.ceil(EVENTS / BATCH);
  const latencies: number[] = [];
  const byReplica = new Map<string, number[]>();
  let next = 0;
  const t0 = performance.now();
  const mark = { t: t0, events: 0 };
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let b = next++; b < batches; b = next++) {
        const events = Array.from({ length: Math.min(BATCH, EVENTS - b * BATCH) }, (_, j) => event(b * BATCH + j));
        const t = performance.now();
        await send(b, events);
        latencies.push(performance.now() - t);
        const replica = `replica ${replicaOf(events[0]?.id) + 1}`;
        byReplica.set(replica, [...(byReplica.get(replica) ?? []), performance.now() - t]);
        // Progress every tenth of the run: the rate over that stretch shows any slowdown as data grows.
        if (latencies.length % Math.max(1, Math.round(batches / 10)) === 0) {
          const now = performance.now();
          const done = latencies.length * BATCH;
          console.error(`  ${done} events, ${Math.round(now - t0) / 1000} s, ${Math.round(((done - mark.events) * 1000) / (now - mark.t))} events/s lately`);
          Object.assign(mark, { t: now, events: done });
        }
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { seconds: (performance.now() - t0) / 1000, p50: pct(latencies, 50), p99: pct(latencies, 99), byReplica };
}

/** Sends EVENTS events in batches of BATCH over CONCURRENCY connections; checks the totals. */
async function drive(mode: string, apiUrl: string): Promise<Result> {
  const anon = new Api(apiUrl);
  const product = await anon.post("/products", { name: `bench ${mode}` });
  if (product.status !== 201) throw new Error(`product: ${product.status} ${JSON.stringify(product.body)}`);
  const api = anon.withKey(product.body.api_key);
  // Eight registrations at a time: with 1,000 users one at a time took minutes.
  const pending = Array.from({ length: USERS }, (_, u) => u);
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let u = pending.shift(); u !== undefined; u = pending.shift()) await api.post("/users", { external_user_id: `user-${u}` });
    }),
  );
  console.error(`  ${USERS} users registered`);
  let accepted = 0;
  let retries = 0;
  const timing = await timedBatches(async (b, events) => {
    // As the client library does: a 503 (backend down) or 429 (busy) is retried; ids make it idempotent.
    for (let attempt = 1; ; attempt++) {
      const res = await api.post("/events/batch", events);
      if (res.status === 200) {
        accepted += res.body.accepted + res.body.duplicates;
        return;
      }
      if ((res.status !== 503 && res.status !== 429) || attempt >= 5) throw new Error(`batch ${b}: ${res.status} ${JSON.stringify(res.body)}`);
      retries++;
      if (res.status === 429) await new Promise((r) => setTimeout(r, Number(res.headers.get("retry-after") ?? 1) * 1000));
    }
  });
  if (retries > 0) console.log(`  (${mode}: ${retries} batches retried after 503 or 429)`);
  if (accepted !== EVENTS) throw new Error(`${mode}: accepted ${accepted} of ${EVENTS}`);
  let tokens = 0;
  for (let u = 0; u < USERS; u++) tokens += (await api.get(`/users/user-${u}/usage`)).body.total_tokens;
  let expected = 0;
  for (let i = 0; i < EVENTS; i++) expected += 100 + (i % 900) + 20 + (i % 300);
  if (tokens !== expected) throw new Error(`${mode}: counted ${tokens} tokens, sent ${expected}`);
  // Analytics is fed asynchronously (outbox and roll-up): how long until it shows every event.
  const t = performance.now();
  for (;;) {
    const s = await api.get("/analytics/summary?days=1");
    if (s.body.total_events === EVENTS && s.body.total_tokens === expected) break;
    if (performance.now() - t > 600_000) throw new Error(`${mode}: analytics shows ${s.body.total_events} of ${EVENTS} events after 10 min`);
    await new Promise((r) => setTimeout(r, 250));
  }
  console.log(`  (${mode}: analytics showed all ${EVENTS} events ${((performance.now() - t) / 1000).toFixed(1)} s after the totals were checked)`);
  return { mode, events: EVENTS, ...timing };
}

/**
 * The all-in-one as `npm start` runs it, its own process: the bench's senders (building and
 * encoding 1,000 events a batch) and their garbage collection stay out of the service's event
 * loop. BENCH_AIO_IN_PROCESS=1 runs the stack in the bench's process instead, as it did before;
 * BENCH_AIO_NODE_OPTIONS are the process's NODE_OPTIONS (`--cpu-prof --cpu-prof-dir=<dir>`).
 */
async function allInOne(): Promise<Result> {
  if (process.env.BENCH_AIO_IN_PROCESS === "1") {
    const stack = await startStack({ mongoUrl, dbPrefix: `bench_aio_${Date.now()}`, logger });
    try {
      return await drive("all-in-one", stack.apiUrl);
    } finally {
      await stack.close();
    }
  }
  const { proc, api } = await startAllInOne({ MONGODB_URL: mongoUrl, MONGODB_DB_PREFIX: `bench_aio_${Date.now()}`, LOG_LEVEL: "warn", NODE_OPTIONS: process.env.BENCH_AIO_NODE_OPTIONS });
  try {
    return await drive("all-in-one", api.baseUrl);
  } finally {
    await proc.stop();
  }
}

/**
 * Two ingestion replicas on one database behind one gateway: the all-in-one stack's module
 * and a second module started beside it with nothing in memory, each on its own gRPC server.
 * The gateway's ingestion client sends each batch to one of them (replicaOf).
 */
async function replicas(): Promise<Result> {
  const dbPrefix = `bench_rep_${Date.now()}`;
  const stack = await startStack({ mongoUrl, dbPrefix, logger });
  const mongo = await connectMongo(mongoUrl);
  const rpc = await listenRpc({ port: 0, host: "127.0.0.1", logger });
  const peers = { tenancy: stack.rpcUrl, plans: stack.rpcUrl, ingestion: stack.rpcUrl, analytics: stack.rpcUrl, webhooks: stack.rpcUrl };
  const second = await createIngestionService({ db: mongo.db(`${dbPrefix}_ingestion`), logger, peers });
  rpc.serve([second]);
  await second.start?.();
  const targets = [rpcClient(IngestionService, stack.rpcUrl), rpcClient(IngestionService, rpc.url)];
  const clients = connectClients(peers);
  const routed: Client<typeof IngestionService> = {
    ...targets[0]!,
    ingestUsageEvents: (req, options) => targets[replicaOf(req.events?.[0]?.id)]!.ingestUsageEvents(req, options),
  };
  const gateway = await buildGateway({ clients: { ...clients, ingestion: routed }, logger });
  const address = await gateway.listen({ port: 0, host: "127.0.0.1" });
  try {
    return await drive("replicas", `${address}/api/v1`);
  } finally {
    await gateway.close();
    await second.stop?.();
    await rpc.close();
    await stack.close();
    await mongo.close();
  }
}

async function split(): Promise<Result> {
  const port = await freePort();
  const rpcBase = await freePortRange(5);
  const child = spawn(process.execPath, ["--import", "tsx", "cmd/split.ts"], {
    cwd: root,
    env: {
      ...process.env,
      MONGODB_URL: mongoUrl,
      MONGODB_DB_PREFIX: `bench_split_${Date.now()}`,
      PORT: String(port),
      RPC_BASE_PORT: String(rpcBase),
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "inherit", "inherit"],
  });
  const apiUrl = `http://127.0.0.1:${port}/api/v1`;
  try {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const ok = await fetch(`${apiUrl}/health`).then((r) => r.ok && r.json()).catch(() => false);
      if (ok && (ok as { status: string }).status === "ok") break;
      if (Date.now() > deadline) throw new Error("split mode did not become healthy");
      await new Promise((r) => setTimeout(r, 500));
    }
    return await drive("split", apiUrl);
  } finally {
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 20_000).unref();
    });
  }
}

/** The same documents, written straight into a collection with the same indexes. */
async function rawInsertMany(): Promise<Result> {
  const mongo = await connectMongo(mongoUrl);
  const coll = mongo.db(`bench_raw_${Date.now()}`).collection("usage_events");
  await coll.createIndex({ product_id: 1, user_id: 1, timestamp: 1 });
  await coll.createIndex({ job: 1 });
  const productId = randomUUID();
  const timing = await timedBatches(async (_b, events) => {
    const job = `job_${randomUUID()}`;
    const docs = events.map((e) => {
      return {
        _id: `${productId}/${e.id}`, product_id: productId, event_id: e.id, user_id: e.user_id, user_known: true,
        session_id: e.session_id, timestamp: new Date(e.timestamp), model: e.model, input_tokens: e.input_tokens,
        output_tokens: e.output_tokens, total_tokens: e.input_tokens + e.output_tokens, tool_calls: e.tool_calls,
        tool_call_count: e.tool_calls.length, cost_tokens: e.cost_tokens, cost_tools: e.cost_tools,
        cost_total: e.cost_tokens + e.cost_tools, metadata: e.metadata, source: "auto", description: null, job,
        counter_id: `${productId}|x|y|${e.user_id}`, period_start: new Date(), period_end: new Date(),
        plan_name: null, spend_limit: null, received_at: new Date(),
      };
    });
    await coll.insertMany(docs as never[], { ordered: false });
  });
  await mongo.close();
  return { mode: "insertMany (database only)", events: EVENTS, ...timing };
}

const SENDERS = Number(process.env.BENCH_SENDERS ?? 24);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
/** The client libraries' default request timeout. */
const CLIENT_TIMEOUT_MS = 10_000;

async function metricTotal(metric: { get(): Promise<{ values: { value: number }[] }> }): Promise<number> {
  return (await metric.get()).values.reduce((a, v) => a + v.value, 0);
}

interface OverloadResult {
  bound: number;
  stored: number;
  storedPerS: number;
  acknowledged: number;
  busy: number;
  unavailable: number;
  timeouts: number;
  tailS: number;
  p50: number;
}

/** Senders faster than the store for SECONDS, then stopped at once: how long storing goes on. */
async function overload(bound: number): Promise<OverloadResult> {
  // Bound 0: as before the bound, with no bound in the service and no bound on the wait for
  // admission in the gateway.
  const stack = await startStack({
    mongoUrl,
    dbPrefix: `bench_over_${Date.now()}`,
    logger,
    batchMaxWaitMs: bound === 0 ? 0 : undefined,
    services: { ingestion: { maxEventsInFlight: bound } },
  });
  try {
    const anon = new Api(stack.apiUrl);
    const product = await anon.post("/products", { name: "bench overload" });
    const key = product.body.api_key as string;
    const api = anon.withKey(key);
    for (let u = 0; u < USERS; u++) await api.post("/users", { external_user_id: `user-${u}` });
    console.error(`  bound ${bound || "none"}: ${USERS} users registered; sending for ${SECONDS} s`);
    const counts = { acknowledged: 0, busy: 0, unavailable: 0, timeouts: 0 };
    const latencies: number[] = [];
    let stopped = false;
    const storedAtStart = await metricTotal(ingestedEvents);
    let seq = 0;
    const t0 = performance.now();
    const senders = Array.from({ length: SENDERS }, async () => {
      while (!stopped) {
        const events = Array.from({ length: BATCH }, () => event(seq++));
        const body = JSON.stringify(events);
        for (let failures = 1; !stopped; failures++) {
          const t = performance.now();
          let wait: number;
          try {
            const res = await fetch(`${stack.apiUrl}/events/batch`, {
              method: "POST",
              headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
              body,
              signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
            });
            await res.text();
            if (res.status === 200) {
              counts.acknowledged += events.length;
              latencies.push(performance.now() - t);
              break;
            }
            if (res.status === 429) counts.busy++;
            else if (res.status === 503) counts.unavailable++;
            else throw new Error(`overload: ${res.status}`);
            // The client library's own backoff.
            const after = res.headers.get("retry-after");
            wait = backoffMs(failures, new MeterApiError(res.status, "", after === null ? undefined : Number(after) * 1000));
          } catch (err) {
            if ((err as Error).name !== "TimeoutError") throw err;
            counts.timeouts++;
            wait = backoffMs(failures, err);
          }
          // Stopping ends a backoff too: the sender sends nothing more.
          for (const until = performance.now() + wait; !stopped && performance.now() < until; ) await new Promise((r) => setTimeout(r, 50));
        }
      }
    });
    for (let s = 0; s < SECONDS; s += 5) {
      await new Promise((r) => setTimeout(r, Math.min(5, SECONDS - s) * 1000));
      console.error(`  ${s + 5} s: ${(await metricTotal(ingestedEvents)) - storedAtStart} handled, ${await metricTotal(ingestionInFlight)} in flight, ${JSON.stringify(counts)}`);
    }
    stopped = true;
    const stoppedAt = performance.now();
    const storedAtStop = await metricTotal(ingestedEvents);
    console.error(`  stopped; ${storedAtStop - storedAtStart} events handled, ${await metricTotal(ingestionInFlight)} in flight`);
    let answered = false;
    void Promise.all(senders).then(() => {
      answered = true;
      console.error(`  senders have their answers, ${((performance.now() - stoppedAt) / 1000).toFixed(1)} s after stopping`);
    });
    // Storing has ended once the senders have their answers and nothing has been held for 2 s
    // (what senders abandoned at their timeout included); the tail ends at the last batch stored.
    let last = storedAtStop;
    let lastAt = stoppedAt;
    let quietSince = performance.now();
    let printedAt = quietSince;
    for (;;) {
      await new Promise((r) => setTimeout(r, 50));
      const now = performance.now();
      const stored = await metricTotal(ingestedEvents);
      if (stored !== last) {
        last = stored;
        lastAt = now;
      }
      if (!answered || (await metricTotal(ingestionInFlight)) > 0) quietSince = now;
      if (now - quietSince > 2_000) break;
      if (now - printedAt > 5_000) {
        printedAt = now;
        console.error(`  ${((now - stoppedAt) / 1000).toFixed(0)} s after: ${stored - storedAtStart} handled, ${await metricTotal(ingestionInFlight)} in flight`);
      }
      if (now - stoppedAt > 600_000) throw new Error("overload: still storing 10 min after the senders stopped");
    }
    latencies.sort((a, b) => a - b);
    return {
      bound,
      stored: last - storedAtStart,
      storedPerS: (storedAtStop - storedAtStart) / ((stoppedAt - t0) / 1000),
      ...counts,
      tailS: (lastAt - stoppedAt) / 1000,
      p50: pct(latencies, 50),
    };
  } finally {
    await stack.close();
  }
}

async function overloadRounds(): Promise<void> {
  const bounds = (process.env.BENCH_BOUNDS ?? "0,10000").split(",").map(Number);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
  console.log(`overload: ${SENDERS} senders, batches of ${BATCH}, ${SECONDS} s, ${USERS} users; load ${os.loadavg().map((l) => l.toFixed(1)).join(" ")}`);
  console.log("round  bound  handled/s  acked/s    429s   503s   timeouts   batch p50 ms   stored after the senders stopped (target: a few seconds)");
  for (let r = 1; r <= rounds; r++) {
    for (const bound of bounds) {
      const o = await overload(bound);
      console.log(
        `${String(r).padStart(5)}${String(o.bound || "none").padStart(7)}${o.storedPerS.toFixed(0).padStart(11)}${(o.acknowledged / SECONDS).toFixed(0).padStart(9)}` +
          `${String(o.busy).padStart(8)}${String(o.unavailable).padStart(7)}${String(o.timeouts).padStart(11)}${o.p50.toFixed(0).padStart(15)}` +
          `   ${o.tailS.toFixed(1)} s (load ${os.loadavg()[0]!.toFixed(1)})`,
      );
    }
  }
}

const only = (process.env.BENCH_MODES ?? "raw,all-in-one,split").split(",");
if (only.some((m) => m !== "overload")) console.log(`ingesting ${EVENTS} events in batches of ${BATCH} over ${CONCURRENCY} connections, ${USERS} users (${database.embedded ? "embedded FerretDB" : mongoUrl})`);
if (only.some((m) => m !== "overload")) console.log("\nmode                        events/s   p50 batch ms   p99 batch ms   vs insertMany");
let raw: Result | undefined;
const runs: Record<string, () => Promise<Result>> = { raw: rawInsertMany, "all-in-one": allInOne, split, replicas };
if (only.includes("overload")) await overloadRounds();
for (const mode of only.filter((m) => m !== "overload")) {
  const r = await runs[mode]!();
  if (mode === "raw") raw = r;
  const eps = r.events / r.seconds;
  const ratio = raw ? (eps / (raw.events / raw.seconds)).toFixed(2) : "-";
  console.log(
    `${r.mode.padEnd(28)}${eps.toFixed(0).padStart(8)}${r.p50.toFixed(0).padStart(15)}${r.p99.toFixed(0).padStart(15)}${ratio.padStart(16)}`,
  );
  if (mode === "replicas") {
    for (const [name, list] of [...r.byReplica!].sort()) {
      const sorted = [...list].sort((a, b) => a - b);
      console.log(`  ${name.padEnd(26)}${String(list.length).padStart(8)} batches ${pct(sorted, 50).toFixed(0).padStart(6)} p50 ${pct(sorted, 99).toFixed(0).padStart(6)} p99  first ${list.slice(0, 3).map((x) => x.toFixed(0)).join(", ")} ms`);
    }
  }
}
await database.stop();
process.exit(0);
