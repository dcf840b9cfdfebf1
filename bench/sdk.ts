// `npm run bench:sdk`: the client library against the real stack in-process (embedded database).
// Prints the cost of an awaited guard on a loaded user (target: median <= 1 µs, no network),
// of record(), the heap per cached user (and per leased user, then per leased member of a team of
// 10, before and after its idle lease books go), and the overshoot of a hard cap under concurrent
// call()s with pre-call estimate (target 0), next to the same without the estimate.
//   BENCH_GUARDS=200000 BENCH_RECORDS=50000 BENCH_USERS=300 BENCH_CALLS=1000 npm run bench:sdk
//   BENCH_PARTS=guard npm run bench:sdk     (only the guards: with and without 4 windows on the plan, and a team's member)
// Uses MONGODB_URL when set, else the embedded database in a temporary directory.
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { randomUUID } from "node:crypto";
import pMap from "p-map";
import { Meter } from "../sdk/typescript/src/index.ts";
import { benchPlan, benchProduct, benchUser } from "./support/bench-product.ts";

const GUARDS = Number(process.env.BENCH_GUARDS ?? 200_000);
const RECORDS = Number(process.env.BENCH_RECORDS ?? 50_000);
const USERS = Number(process.env.BENCH_USERS ?? 300);
const CALLS = Number(process.env.BENCH_CALLS ?? 1_000);
/** Which parts run (comma-separated): guard, record, memory, overshoot. Default: all. */
const PARTS = new Set((process.env.BENCH_PARTS ?? "guard,record,memory,overshoot").split(","));
const here = path.dirname(fileURLToPath(import.meta.url));
const run = promisify(execFile);

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc (npm run bench:sdk does)");

const bench = await benchProduct("sdk");
const { stack, apiKey, api } = bench;
const quiet = { warn: () => {} };

const plan = (fields: Record<string, unknown>) => benchPlan(api, fields);
const user = (planId: string) => benchUser(api, planId);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)]!;

const RATES = { "gpt-4o": { input: 2.5, output: 10 }, "gpt-4o-mini": { input: 0.15, output: 0.6 } };
const bigPlan = await plan({
  max_spend_per_period: 1e9,
  max_spend_per_session: 1e9,
  cost_rates: RATES,
  model_limits: { "gpt-4o": { max_tokens_per_period: 1e12 } },
});

/** A team on a plan with a cap, a model cap, a team-scope and a member-scope window (none reached): its id. */
async function benchTeam(): Promise<string> {
  teamPlan ??= await plan({
    max_spend_per_period: 1e9,
    cost_rates: RATES,
    model_limits: { "gpt-4o": { max_tokens_per_period: 1e12 } },
    limits: [
      { name: "team_daily", metric: "spend", max: 1e6, window: "day", scope: "team" },
      { name: "seat", metric: "spend", max: 1e6, window: "month", scope: "member" },
    ],
  });
  const team = `t-${randomUUID()}`;
  await api.post("/teams", { external_team_id: team, name: "bench team" });
  await api.post(`/teams/${team}/subscription`, {
    plan_id: teamPlan,
    period_start: new Date(Date.now() - 86_400_000).toISOString(),
    period_end: new Date(Date.now() + 20 * 86_400_000).toISOString(),
  });
  return team;
}
let teamPlan: string | undefined;

console.log(`meterline benchmark (real stack in-process, ${bench.database}; shared 2-core machine, figures are noisy)\n`);

// 1. guard on a loaded user: every dimension checked, model name normalized, nothing sent;
// then the same on a plan with 4 windows (a day, a month, requests a minute, a rolling 5 hours).
async function guardBench(label: string, planId: string, team?: string) {
  const m = new Meter({ apiKey, baseURL: stack.apiUrl, logger: quiet, flushIntervalMs: 3_600_000 });
  const id = await user(planId);
  if (team) await api.request("PUT", `/users/${id}/team`, { body: { team_id: team } });
  await m.guard(id, { model: "gpt-4o-2024-08-06" });
  const session = (await api.get(`/users/${id}/session`)).body;
  const windows = (session.plan_config?.limits ?? []).length;
  const teamDims = (session.limits ?? []).filter((l: { reason: string }) => l.reason.startsWith("team:")).length;
  const input = { model: "gpt-4o-2024-08-06", input_tokens: 100 };
  for (let i = 0; i < 20_000; i++) await m.guard(id, input); // warm-up
  const each: number[] = [];
  for (let i = 0; i < GUARDS; i++) {
    const t0 = process.hrtime.bigint();
    await m.guard(id, input);
    each.push(Number(process.hrtime.bigint() - t0));
  }
  // Tight loops of 10,000: the service's own timers share this thread and land in some of them.
  const chunks: number[] = [];
  for (let c = 0; c < Math.max(1, GUARDS / 10_000); c++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 10_000; i++) await m.guard(id, input);
    chunks.push(Number(process.hrtime.bigint() - t0) / 10_000);
  }
  console.log(
    `${label.padEnd(32)}median ${median(each)} ns/call, p99 ${p99(each)} ns (each timed, incl. ~50 ns of timer); ` +
      `tight loops of 10k: ${Math.min(...chunks).toFixed(0)} ns best, ${median(chunks).toFixed(0)} ns median; ${GUARDS} calls; ${windows} windows in the session view` +
      (team ? `, ${teamDims} team dimensions` : ""),
  );
  await m.shutdown({ timeoutMs: 1 });
}
if (PARTS.has("guard")) {
  await guardBench("guard (awaited, loaded user):", bigPlan);
  const windowsPlan = await plan({
    max_spend_per_period: 1e9,
    max_spend_per_session: 1e9,
    cost_rates: RATES,
    model_limits: { "gpt-4o": { max_tokens_per_period: 1e12 } },
    time_zone: "America/New_York",
    limits: [
      { name: "daily", metric: "spend", max: 1e6, window: "day" },
      { name: "monthly", metric: "spend", max: 1e7, window: "month" },
      { name: "per_minute", metric: "requests", max: 1e9, window: "minute" },
      { name: "five_hours", metric: "tokens", max: 1e12, window: "rolling", duration_minutes: 300 },
    ],
  });
  await guardBench("guard, 4 windows on the plan:", windowsPlan);
  // A member of a team on the first plan: the team's cap, its model cap, a team window and a member window checked too.
  const team = await benchTeam();
  await guardBench("guard, a team's member:", bigPlan, team);
}

// 2. record: price, count, build the event, queue it (delivery is not timed).
if (PARTS.has("record")) {
  const m = new Meter({ apiKey, baseURL: stack.apiUrl, logger: quiet, flushIntervalMs: 3_600_000, maxQueueSize: RECORDS + 10 });
  const id = await user(bigPlan);
  await m.guard(id);
  const input = { model: "gpt-4o-2024-08-06", input_tokens: 100, output_tokens: 50, tool_calls: ["search"] };
  const each: number[] = [];
  for (let i = 0; i < RECORDS; i++) {
    const t0 = process.hrtime.bigint();
    await m.record(id, input);
    each.push(Number(process.hrtime.bigint() - t0));
  }
  console.log(`record (awaited):               median ${median(each)} ns/call, p99 ${p99(each)} ns; ${RECORDS} calls (queued, not sent)`);
}

// 3. Heap per cached user, measured in a child process that holds only the client (this
// process also runs the service, whose own caches would blur the figure).
if (PARTS.has("memory")) {
  const t0 = performance.now();
  const ids = await pMap(Array.from({ length: USERS + 4 }), () => user(bigPlan), { concurrency: 2 });
  const setupS = (performance.now() - t0) / 1000;
  // The child's figures (its last line of output), with or without budget leases.
  const measured = async <T>(leases: boolean): Promise<T> => {
    const env = { ...process.env, METER_API_KEY: apiKey, METER_BASE_URL: stack.apiUrl, BENCH_USER_IDS: JSON.stringify(ids), ...(leases && { BENCH_LEASES: "1" }) };
    const child = await run(process.execPath, ["--expose-gc", "--import", "tsx", path.join(here, "sdk-memory.ts")], { env, maxBuffer: 1 << 20 });
    return JSON.parse(child.stdout.trim().split("\n").pop()!) as T;
  };
  const r = await measured<{ users: number; loaded: number; queued: number; delivered: number }>(false);
  const kib = (bytes: number) => (bytes / 1024).toFixed(2);
  console.log(
    `memory per cached user:         ${kib(r.loaded)} KiB with its view loaded, ${kib(r.queued)} KiB with one call's event queued, ${kib(r.delivered)} KiB once delivered; ` +
      `${r.users} users cached (registered in ${setupS.toFixed(0)} s)`,
  );
  // The same users, each call reserved from a budget lease: what a user's lease book adds, and
  // what is left once the idle users' books are gone (their views stay cached).
  const l = await measured<{ users: number; books: number; leased: number; forgotten: number }>(true);
  console.log(
    `memory per leased user:         ${kib(l.leased)} KiB with its lease book (${l.books} books), ${kib(l.forgotten)} KiB once idle users' books were forgotten; ${l.users} users cached`,
  );
  // The same users again, now members of teams of 10: each call reserved from the member's lease
  // and its team's (the team's cap, model cap and windows), and what is left once idle.
  for (let i = 0; i < ids.length; i += 10) {
    const team = await benchTeam();
    for (const id of ids.slice(i, i + 10)) await api.request("PUT", `/users/${id}/team`, { body: { team_id: team } });
  }
  const t = await measured<{ users: number; books: number; teams: number; leased: number; forgotten: number }>(true);
  console.log(
    `memory per leased team member:  ${kib(t.leased)} KiB with its and its team's lease books (${t.books} books, ${t.teams} teams'), ${kib(t.forgotten)} KiB once idle books were forgotten; ${t.users} users cached`,
  );
}

// 4. Overshoot of a hard cap under CALLS concurrent call()s. Each call really uses 100 input
// tokens and 1..500 output tokens; the buffer is 500, so a real call never exceeds its estimate.
async function overshoot(preCallEstimate: boolean) {
  // Estimate: (100 + 500) tokens at $1/1K = $0.60 a call; real: $0.101 to $0.60.
  const cap = 50;
  const planId = await plan({ max_spend_per_period: cap, cost_rates: { m: { input: 1, output: 1 } }, pre_call_estimate: preCallEstimate, pre_call_buffer_tokens: 500 });
  const id = await user(planId);
  const m = new Meter({ apiKey, baseURL: stack.apiUrl, logger: quiet });
  await m.guard(id, { model: "m" });
  let ran = 0;
  const results = await Promise.allSettled(
    Array.from({ length: CALLS }, (_, i) =>
      m.call(id, { model: "m", input_tokens: 100, usage: (out: number) => ({ input_tokens: 100, output_tokens: out }) }, async () => {
        ran++;
        await new Promise((r) => setTimeout(r, Math.random() * 20));
        return 1 + ((i * 7919) % 500);
      }),
    ),
  );
  await m.flush({ timeoutMs: 60_000 });
  const served = (await api.get(`/users/${id}/usage`)).body.total_cost as number;
  const local = m.state(id)!.period_cost;
  const blocked = results.filter((r) => r.status === "rejected").length;
  console.log(
    `overshoot, ${CALLS} concurrent call()s, pre_call_estimate ${String(preCallEstimate).padEnd(5)}: ` +
      `${Math.max(0, served - cap).toFixed(4)} $ over a $${cap} cap (${(Math.max(0, served - cap) / cap * 100).toFixed(1)}%); spend ${served.toFixed(4)} on the service, ${local.toFixed(4)} locally; ${ran} ran, ${blocked} blocked`,
  );
  await m.shutdown({ timeoutMs: 1 });
}
if (PARTS.has("overshoot")) {
  await overshoot(true);
  await overshoot(false);
}

await bench.close();
