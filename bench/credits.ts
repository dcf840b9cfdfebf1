// `npm run bench:credits`: usage ingestion through the REST gateway with prepaid credits on
// against the same with credits off, and the size of the credit ledger after many events.
//
// One stack, one product, two populations of BENCH_USERS users each (10,000): "on" on a
// pure-prepaid plan (max_spend_per_period 0, credits_enabled: every event draws credits), each
// holding 3 grants (a promotional one drawn first, two paid ones, one of them expiring); "off"
// on the same plan with credits disabled. Rounds of BENCH_ROUND_EVENTS events (batches of
// BENCH_BATCH over BENCH_CONCURRENCY connections, each batch over BENCH_BATCH distinct users)
// alternate between the two populations, BENCH_ROUNDS in all (BENCH_USERS_PER_BATCH distinct
// users a batch, default every event another user); prints events/s of each round
// and the ratio of the medians (target >= 0.9). Then "on" rounds go on until BENCH_LEDGER_EVENTS
// (1,000,000) events of credit users were ingested, and it prints the ledger's size: documents
// and bytes of credit_ledger, and what the accounts still hold.
//
// Ingestion's clock moves BENCH_ROUND_HOURS (1) hour ahead after every round: a round is an
// hour of a product's traffic, so usage entries are summed per grant and hour as in production.
// The grants are written straight into the database (30,000 through the API took minutes).
//   BENCH_USERS=10000 BENCH_ROUND_EVENTS=20000 BENCH_ROUNDS=8 BENCH_LEDGER_EVENTS=1000000 npm run bench:credits
// BENCH_PROFILE=1 prints after each round the CPU time of this process (the whole stack) and of
// the embedded database, and the database commands per batch by kind and collection with the
// time they took (summed over commands in flight at once). BENCH_CPU_PROFILE=<dir> writes a CPU
// profile of the stack over each round there (<on|off>-<round>.cpuprofile).
// Uses MONGODB_URL when set, else the embedded database in a temporary directory.
import { randomUUID } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import { BSON, type Db } from "mongodb";
import { connectMongo } from "@meter/lib/mongo";
import { fromDatedJson } from "@meter/lib/dated-json";
import { AccountChange, accountId, userOwner } from "../services/ingestion/credits/account.ts";
import { hourOf, type GrantState } from "../services/ingestion/credits/allocate.ts";
import { grantRecordId, storedAccount, type CreditIndexDoc, type ExpiryDoc, type GrantRecordDoc } from "../services/ingestion/credits/store.ts";
import { benchPlan, benchProduct } from "./support/bench-product.ts";
import { countCommands, processCpuMs } from "./support/command-counts.ts";
import type { Api } from "../test/support/http.ts";

const USERS = Number(process.env.BENCH_USERS ?? 10_000);
const ROUND_EVENTS = Number(process.env.BENCH_ROUND_EVENTS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const BATCH = Number(process.env.BENCH_BATCH ?? 1_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
const LEDGER_EVENTS = Number(process.env.BENCH_LEDGER_EVENTS ?? 1_000_000);
const ROUND_HOURS = Number(process.env.BENCH_ROUND_HOURS ?? 1);
/** Distinct users in one batch: BENCH_BATCH (each event another user, the most work per event) or fewer (a server's batch of the users it serves). */
const USERS_PER_BATCH = Number(process.env.BENCH_USERS_PER_BATCH ?? BATCH);
const PROFILE = process.env.BENCH_PROFILE === "1";
const commands = PROFILE ? countCommands() : null;
const PROFILE_DIR = process.env.BENCH_CPU_PROFILE;
const profiler = PROFILE_DIR ? new Session() : null;
profiler?.connect();
await profiler?.post("Profiler.enable");
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const MODELS = ["gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet", "o1"];

let offset = 0;
const clock = () => new Date(Date.now() + offset);

const bench = await benchProduct("credits", { services: { ingestion: { now: clock } } });
const mongo = await connectMongo(bench.mongoUrl);
const db = mongo.db(`${bench.dbPrefix}_ingestion`);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

async function registerUsers(api: Api, planId: string, prefix: string): Promise<void> {
  const start = new Date(Date.now() - DAY).toISOString();
  // Long enough for every simulated hour of the run.
  const end = new Date(Date.now() + 120 * DAY).toISOString();
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      for (let u = next++; u < USERS; u = next++) {
        const id = `${prefix}-${u}`;
        const created = await api.post("/users", { external_user_id: id });
        if (created.status !== 201) throw new Error(`user ${id}: ${created.status}`);
        const sub = await api.post(`/users/${id}/subscription`, { plan_id: planId, period_start: start, period_end: end });
        if (sub.status !== 200) throw new Error(`subscription ${id}: ${sub.status} ${JSON.stringify(sub.body)}`);
      }
    }),
  );
}

/** Three grants per user, built by the service's own account code and written in bulk. */
async function seedGrants(db: Db, productId: string, prefix: string): Promise<void> {
  const now = clock();
  const expires = new Date(now.getTime() + 90 * DAY);
  const grants = (u: string): GrantState[] => [
    { id: `promo-${u}`, amount_nano: 5e9, remaining_nano: 5e9, kind: "promotional", priority: 10, effective_at: now, expires_at: expires, created_at: now },
    { id: `pay-${u}-1`, amount_nano: 20e9, remaining_nano: 20e9, kind: "paid", priority: 50, effective_at: now, expires_at: null, created_at: now },
    { id: `pay-${u}-2`, amount_nano: 100e9, remaining_nano: 100e9, kind: "paid", priority: 50, effective_at: now, expires_at: expires, created_at: now },
  ];
  const accounts = [];
  const records: GrantRecordDoc[] = [];
  const index: CreditIndexDoc[] = [];
  for (let u = 0; u < USERS; u++) {
    const owner = userOwner(`${prefix}-${u}`);
    const change = new AccountChange(null, productId, owner, now, 1);
    const gs = grants(`${prefix}-${u}`);
    for (const g of gs) change.addGrant(g, new Date(0));
    // As an account is once its grant entries are in the ledger: the ledger's grant entries are not what is measured.
    accounts.push(storedAccount({ ...change.write()!.after, ops: {}, notices: {} }));
    for (const g of gs) {
      records.push({
        _id: grantRecordId(productId, owner, g.id),
        product_id: productId,
        owner,
        grant_id: g.id,
        amount_nano: g.amount_nano,
        kind: g.kind,
        priority: g.priority,
        effective_at: g.effective_at,
        expires_at: g.expires_at,
        description: null,
        metadata: null,
        created_at: now,
        sent: "[]",
      });
    }
    index.push({ _id: `${productId}|${owner}`, grants: gs.map((g) => g.id) });
  }
  for (let i = 0; i < accounts.length; i += 1000) await db.collection("credit_accounts").insertMany(accounts.slice(i, i + 1000) as never[]);
  for (let i = 0; i < records.length; i += 1000) await db.collection("credit_grants").insertMany(records.slice(i, i + 1000) as never[]);
  for (let i = 0; i < index.length; i += 1000) await db.collection("credit_index").insertMany(index.slice(i, i + 1000) as never[]);
  const bucket: ExpiryDoc = { _id: String(hourOf(expires.getTime())), accounts: accounts.map((a) => accountId(productId, a.owner)) };
  await db.collection<ExpiryDoc>("credit_expiries").insertOne(bucket);
  await db.collection<ExpiryDoc>("credit_expiries").updateOne({ _id: "cursor" }, { $min: { hour: hourOf(expires.getTime()) } }, { upsert: true });
}

let sent = 0;
let batchesSent = 0;
function event(prefix: string, i: number, batch: number) {
  const input = 100 + (i % 900);
  const output = 20 + (i % 300);
  return {
    id: randomUUID(),
    user_id: `${prefix}-${(batch * USERS_PER_BATCH + (i % USERS_PER_BATCH)) % USERS}`,
    timestamp: clock().toISOString(),
    model: MODELS[i % MODELS.length],
    input_tokens: input,
    output_tokens: output,
    cost_tokens: input * 0.0000025 + output * 0.00001,
    metadata: { route: "/chat" },
  };
}

/** One round of ROUND_EVENTS events of a population; events per second. */
async function round(api: Api, prefix: string): Promise<number> {
  const batches = Math.ceil(ROUND_EVENTS / BATCH);
  const base = sent;
  sent += ROUND_EVENTS;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let b = next++; b < batches; b = next++) {
        const n = batchesSent++;
        const events = Array.from({ length: Math.min(BATCH, ROUND_EVENTS - b * BATCH) }, (_, j) => event(prefix, base + b * BATCH + j, n));
        for (let attempt = 1; ; attempt++) {
          const res = await api.post("/events/batch", events);
          if (res.status === 200) break;
          if (res.status !== 503 || attempt >= 30) throw new Error(`batch: ${res.status} ${JSON.stringify(res.body)}`);
          // A loaded machine's timeouts: the same batch again, as the client libraries send it.
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    }),
  );
  const rate = ROUND_EVENTS / ((performance.now() - t0) / 1000);
  offset += ROUND_HOURS * HOUR;
  return rate;
}

try {
  const onPlan = await benchPlan(bench.api, { max_spend_per_period: 0, credits_enabled: true, credits_low_at: 1 });
  const offPlan = await benchPlan(bench.api, { max_spend_per_period: 0 });
  let t = performance.now();
  await registerUsers(bench.api, onPlan, "on");
  await registerUsers(bench.api, offPlan, "off");
  console.error(`${2 * USERS} users registered in ${((performance.now() - t) / 1000).toFixed(0)} s`);
  t = performance.now();
  await seedGrants(db, bench.productId, "on");
  console.error(`${3 * USERS} grants written in ${((performance.now() - t) / 1000).toFixed(0)} s`);
  const check = await bench.api.get("/users/on-0/credits");
  if (check.body.balance !== 125) throw new Error(`seeded balance ${JSON.stringify(check.body)}`);

  const rates: Record<"on" | "off", number[]> = { on: [], off: [] };
  let onEvents = 0;
  commands?.take();
  let cpu = process.cpuUsage();
  let dbCpu = processCpuMs(bench.databasePid);
  for (let r = 0; r < ROUNDS; r++) {
    const which = r % 2 === 0 ? "on" : "off";
    await profiler?.post("Profiler.start");
    const rate = await round(bench.api, which);
    if (profiler) await writeFile(`${PROFILE_DIR}/${which}-${r + 1}.cpuprofile`, JSON.stringify((await profiler.post("Profiler.stop")).profile));
    rates[which].push(rate);
    if (which === "on") onEvents += ROUND_EVENTS;
    console.log(`round ${r + 1} credits ${which.padEnd(3)} ${Math.round(rate)} events/s`);
    if (commands) {
      const used = process.cpuUsage(cpu);
      const db = processCpuMs(bench.databasePid);
      const batches = Math.ceil(ROUND_EVENTS / BATCH);
      const top = commands.take().slice(0, 14).map(([k, c]) => `${k} ${(c.n / batches).toFixed(1)} (${Math.round(c.ms / batches)} ms)`);
      console.log(`  cpu: stack ${Math.round((used.user + used.system) / 1000)} ms, database ${db - dbCpu} ms; per batch: ${top.join(", ")}`);
      cpu = process.cpuUsage();
      dbCpu = db;
    }
  }
  console.log(`credits on: median ${Math.round(median(rates.on))} events/s; off: ${Math.round(median(rates.off))} events/s; ratio ${(median(rates.on) / median(rates.off)).toFixed(3)} (target >= 0.9)`);

  t = performance.now();
  /** Documents and bytes of a collection. */
  const size = async (name: string) => {
    let docs = 0;
    let bytes = 0;
    for await (const d of db.collection(name).find({})) {
      docs++;
      bytes += BSON.calculateObjectSize(d);
    }
    return { docs, bytes };
  };
  /** The ledger: its day documents and their entries, and the entries the accounts still hold (usage of the current UTC day). */
  const ledgerSize = async () => {
    const written = { docs: 0, bytes: 0, entries: 0 };
    for await (const d of db.collection("credit_ledger").find({})) {
      written.docs++;
      written.bytes += BSON.calculateObjectSize(d);
      written.entries += Object.keys(d.e ?? {}).length;
    }
    let held = 0;
    for await (const a of db.collection("credit_accounts").find({})) held += Object.keys((fromDatedJson<{ ops?: object }>(a.state as string)).ops ?? {}).length;
    return { ...written, held };
  };
  const hours = () => offset / HOUR;
  while (onEvents < LEDGER_EVENTS) {
    const rate = await round(bench.api, "on");
    onEvents += ROUND_EVENTS;
    if ((onEvents / ROUND_EVENTS) % 10 === 0) {
      const l = await ledgerSize();
      console.log(
        `  ${onEvents} events of credit users, ${hours()} simulated hours, ${((performance.now() - t) / 1000).toFixed(0)} s (last round ${Math.round(rate)} events/s); ` +
          `credit_ledger ${l.docs} documents, ${(l.bytes / 1e6).toFixed(1)} MB, ${l.entries} entries; ${l.held} entries held by the accounts`,
      );
    }
  }
  // Every user's draws are exact: the balance plus the ledger's usage is what was granted.
  const sample = (await bench.api.get("/users/on-7/credits")).body;
  const usage = (await bench.api.get("/users/on-7/usage")).body.total_cost as number;
  if (Math.abs(sample.balance + usage - 125) > 1e-6) throw new Error(`on-7: balance ${sample.balance} + usage ${usage} != 125`);
  const l = await ledgerSize();
  const accounts = await size("credit_accounts");
  const entries = l.entries + l.held;
  console.log(
    `after ${onEvents} events of ${USERS} credit users over ${hours()} simulated hours (both populations' rounds): ` +
      `credit_ledger ${l.docs} documents, ${(l.bytes / 1e6).toFixed(1)} MB, ${l.entries} entries; the accounts hold ${l.held} entries of the current UTC day ` +
      `(credit_accounts ${accounts.docs} documents, ${(accounts.bytes / 1e6).toFixed(1)} MB); ${entries} entries in all, ` +
      `${(entries / onEvents).toFixed(3)} an event, ${(l.bytes / onEvents).toFixed(1)} ledger bytes an event`,
  );
} finally {
  await mongo.close();
  await bench.close();
}
