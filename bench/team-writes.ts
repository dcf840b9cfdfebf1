// `npm run bench:team-writes`: what a member's team costs ingestion, in database statements
// (which do not depend on the machine's load) and in events/s. One stack in-process, two
// products with the same plan as bench:scale's ("pro": a period cap and BENCH_WINDOWS of its
// four windows), BENCH_USERS users each; in the second every user i is a member of team
// i mod BENCH_TEAMS, on a team plan with a team cap, a team-scope and a member-scope daily window
// (as bench:scale's team case). Rounds of BENCH_BATCHES batches of BENCH_BATCH events for
// BENCH_BATCH_USERS random users each (BENCH_CONCURRENCY in flight) alternate between the two
// products, BENCH_ROUNDS each; it prints per round the events/s and, per batch, the MongoDB
// commands and statements (an update command of 200 updates: 200) by command and collection,
// with the CPU a batch of this process (the whole stack) and of the embedded database, then the
// ratio of the median rates (teams over no teams).
//   BENCH_USERS=1000 BENCH_TEAMS=100 BENCH_ROUNDS=3 npm run bench:team-writes
// BENCH_CPU_PROFILE=<dir> writes a CPU profile of each measured round there (<product>-<round>.cpuprofile).
// Uses MONGODB_URL when set, else the embedded database in a temporary directory.
import { writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import pMap from "p-map";
import { benchProduct } from "./support/bench-product.ts";
import { usageBatch } from "./support/seed-events.ts";
import { scalePlans } from "./support/scale-plans.ts";
import { productWithPlans } from "./support/database.ts";
import { countCommands, processCpuMs, type CommandCount } from "./support/command-counts.ts";
import { Api } from "../test/support/http.ts";

const USERS = Number(process.env.BENCH_USERS ?? 1_000);
const TEAMS = Number(process.env.BENCH_TEAMS ?? 100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BATCHES = Number(process.env.BENCH_BATCHES ?? 8);
const BATCH = Number(process.env.BENCH_BATCH ?? 1_000);
const BATCH_USERS = Number(process.env.BENCH_BATCH_USERS ?? 100);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
const WINDOWS = Number(process.env.BENCH_WINDOWS ?? 4);

const commands = countCommands();
const PROFILE_DIR = process.env.BENCH_CPU_PROFILE;
const profiler = PROFILE_DIR ? new Session() : null;
profiler?.connect();
await profiler?.post("Profiler.enable");
const bench = await benchProduct("team-writes");
const anon = new Api(bench.stack.apiUrl);
const now = new Date();
const period = {
  period_start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
  period_end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
};

const ok = <R extends { status: number; body: unknown }>(res: R, want: number, what: string): R => {
  if (res.status !== want) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res;
};

async function product(name: string, teams: number): Promise<Api> {
  const { api, plans } = await productWithPlans(anon, name, scalePlans(WINDOWS));
  const [plan, teamPlan] = [plans[0]!, plans[1]!];
  await pMap(
    Array.from({ length: teams }, (_, t) => `team-${t}`),
    async (t) => {
      ok(await api.post("/teams", { external_team_id: t, name: t }), 201, "team");
      ok(await api.post(`/teams/${t}/subscription`, { plan_id: teamPlan.id, ...period }), 200, "team subscription");
    },
    { concurrency: 8 },
  );
  await pMap(
    Array.from({ length: USERS }, (_, i) => i),
    async (i) => {
      ok(await api.post("/users", { external_user_id: `user-${i}` }), 201, "user");
      ok(await api.post(`/users/user-${i}/subscription`, { plan_id: plan.id, ...period }), 200, "subscription");
      if (teams > 0) ok(await api.put(`/users/user-${i}/team`, { team_id: `team-${i % teams}` }), 200, "membership");
    },
    { concurrency: 16 },
  );
  return api;
}

const plain = await product("bench team-writes plain", 0);
const withTeams = await product("bench team-writes teams", TEAMS);

async function round(api: Api): Promise<number> {
  const t = performance.now();
  await pMap(
    Array.from({ length: BATCHES }, (_, b) => b),
    async (b) => {
      const users = Array.from({ length: BATCH_USERS }, () => `user-${Math.floor(Math.random() * USERS)}`);
      const events = usageBatch(users, BATCH, `s-${b}`);
      for (let attempt = 1; ; attempt++) {
        const res = await api.post("/events/batch", events);
        if (res.status === 200) break;
        if ((res.status !== 503 && res.status !== 429) || attempt >= 5) throw new Error(`batch: ${res.status} ${JSON.stringify(res.body)}`);
        await new Promise((r) => setTimeout(r, 1000));
      }
    },
    { concurrency: CONCURRENCY },
  );
  return (BATCHES * BATCH) / ((performance.now() - t) / 1000);
}

const line = (counts: [string, CommandCount][]) => {
  const total = counts.reduce((s, [, c]) => s + c.statements, 0);
  const parts = counts
    .filter(([, c]) => c.statements / BATCHES >= 0.5)
    .sort((a, b) => b[1].statements - a[1].statements)
    .map(([k, c]) => `${k} ${(c.n / BATCHES).toFixed(1)}/${(c.statements / BATCHES).toFixed(0)} (${(c.ms / BATCHES).toFixed(0)} ms)`);
  return `${(total / BATCHES).toFixed(0)} statements a batch: ${parts.join(", ")}`;
};

console.log(`bench:team-writes on ${bench.database}: ${USERS} users, ${TEAMS} teams, rounds of ${BATCHES} batches of ${BATCH} events for ${BATCH_USERS} users (commands/statements a batch)`);
const rates: Record<"plain" | "teams", number[]> = { plain: [], teams: [] };
// One warm-up round each, not counted.
await round(plain);
await round(withTeams);
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, api] of [["plain", plain], ["teams", withTeams]] as const) {
    // What relays and roll-ups of the round before sent is not this round's.
    await new Promise((res) => setTimeout(res, 1500));
    commands.take();
    const cpu = { node: process.cpuUsage(), database: processCpuMs(bench.databasePid) };
    await profiler?.post("Profiler.start");
    const eps = await round(api);
    if (profiler) await writeFile(`${PROFILE_DIR}/${name}-${r}.cpuprofile`, JSON.stringify((await profiler.post("Profiler.stop")).profile));
    const used = process.cpuUsage(cpu.node);
    const cpuLine = `CPU a batch: node ${((used.user + used.system) / 1000 / BATCHES).toFixed(0)} ms, database ${((processCpuMs(bench.databasePid) - cpu.database) / BATCHES).toFixed(0)} ms`;
    rates[name].push(eps);
    console.log(`${name.padEnd(6)} ${eps.toFixed(0).padStart(6)} events/s; ${cpuLine}; ${line(commands.take())}`);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`median events/s: no teams ${median(rates.plain).toFixed(0)}, teams ${median(rates.teams).toFixed(0)}, teams/no teams ${(median(rates.teams) / median(rates.plain)).toFixed(2)}`);
await bench.close();
process.exit(0);
