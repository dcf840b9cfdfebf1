// `npm run bench:scale`: do the hot paths cost the same at 1k, 10k and 100k users? All-in-one
// stack as `npm start` runs it (calls between the modules in-process), REST gateway, one
// product with one dated plan. At each size it prints:
//   - users created and subscribed per second: BENCH_WINDOW users through the REST API
//     (POST /users then POST /users/{id}/subscription, BENCH_CONCURRENCY clients at a time);
//     with BENCH_SIGNUP_SESSIONS=1 each is followed by its first GET /users/{id}/session, as a
//     client library starting to serve a new user reads it (p50/p99 printed after the table;
//     the creation rate then includes those sessions);
//   - session p50/p99 right after: BENCH_SESSIONS sequential GET /users/{id}/session of random
//     users on the measured stack alone, right after the window's sign-ups and the ingestion burst
//     below (the issue's "right after users were created and subscribed");
//   - session p50/p99 beside gRPC: the same again, and beside it the same through a second stack
//     on the same databases whose gateway and modules call each other over loopback gRPC
//     (RPC_IN_PROCESS=false), calls alternating (timed after ingestion, so most users at 1k have
//     a counter). Those sessions may still meet the stack rolling up the burst, and each follows
//     a call to the other stack, just started and maybe still finishing it on the same two cores. So the in-process
//     session is timed again alone ("alone, idle" column): once the second stack is closed and
//     the first has handed everything over (both outboxes empty on two scrapes of /metrics in
//     a row, then IDLE_SETTLE_MS more for analytics' roll-up). Both figures are printed, and
//     beside the second the share of those sessions the gateway itself answered within 5 ms
//     (its meter_http_request_duration_seconds histogram): what the client sees beyond that
//     is the client's and the machine's. Then the same users' sessions once more, in another
//     order ("refresh, idle"): the client library reads a user's session when it starts serving
//     that user and again every refreshIntervalMs (60 s), so most sessions a product asks for
//     are of users read within the last minutes (whose user document the plans service then
//     holds in memory, services/plans/README.md "User cache");
//   - ResolveUsers of 1,000 random users (what ingestion asks per batch), median of 3;
//   - ingestion events/s: BENCH_BATCHES batches of BENCH_BATCH events through POST /events/batch,
//     each batch for BENCH_BATCH_USERS users drawn at random from the whole population,
//     BENCH_CONCURRENCY batches in flight; a 503 (backend busy) is retried, as the client
//     library does, and counted.
// Reaching 100k users by the REST API alone would take long, so the users below each size's
// window are seeded with the plans service's own store functions (UserStore.insert,
// UserStore.appendSubscription, SubscriberStore.move: what the CreateUser and SetSubscription
// handlers write, without the RPC and validation), BENCH_SEED_CONCURRENCY at a time, straight
// into the stack's plans database; only the measured window goes through the API.
//   BENCH_SIZES=1000,10000,100000 BENCH_WINDOW=300 BENCH_SESSIONS=2000 BENCH_BATCHES=10 \
//   BENCH_BATCH=1000 BENCH_BATCH_USERS=100 BENCH_CONCURRENCY=4 BENCH_WINDOWS=4 npm run bench:scale
// BENCH_WINDOWS limits (day, month, rolling 5 hours, requests per minute) are on the plan; 0: none.
// BENCH_SESSION_BLOCK=250 also prints each phase of sessions timed alone ("right after", "alone,
// idle", "refresh, idle", the team case's) by place (p50/p99 of each 250 calls): whether a
// phase's slow calls gather at its start.
// BENCH_TEAMS=1000 adds the team case: a second product with the same users and plan whose users
// are members of BENCH_TEAMS teams (user i in team i mod BENCH_TEAMS) on a team plan with a team
// cap, a team-scope daily window and a member-scope daily window. Per size it prints both
// products' sessions (alone, idle; refresh, idle) and their ingestion in alternating rounds
// (BENCH_TEAM_ROUNDS each), with the teams' rate over the rate without teams, and where a first
// session goes in each product (GetSession and ResolveUsers straight to the services).
// The stacks run as their own processes (`cmd/all-in-one.ts`, as `npm start` runs), so that the
// bench's client and seeding work, and its garbage collection, stay out of the measured server.
// Sessions are timed from a child process of their own (support/session-client.ts), so that the
// seeding's heap, and its garbage collection, stay out of the client's timings too, through
// undici's request API over a keep-alive connection (BENCH_SESSION_CLIENT=fetch: through fetch).
// Uses MONGODB_URL when set, else the embedded database in a temporary directory.
import { randomUUID } from "node:crypto";
import os from "node:os";
import pMap from "p-map";
import { createLogger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { LIVENESS, rpcClient } from "@meter/lib/rpc";
import { Health } from "@meter/proto/grpc/health/v1/health_pb";
import { IngestionService } from "@meter/proto/meter/ingestion/v1/ingestion_pb";
import { PlansService } from "@meter/proto/meter/plans/v1/plans_pb";
import { counterId } from "../services/ingestion/domain/counter-ids.ts";
import { PlanMemberStore } from "../services/plans/store/plan-members.ts";
import { SubscriberStore } from "../services/plans/store/subscribers.ts";
import { UserStore } from "../services/plans/store/users.ts";
import { Api } from "../test/support/http.ts";
import { startAllInOne } from "../test/support/processes.ts";
import { closeSessionClient, SESSION_CLIENT, timeSessions, type SessionApi, type SessionCall } from "./support/session-client.ts";
import { pct } from "./support/stats.ts";
import { usageBatch } from "./support/seed-events.ts";
import { scalePlans } from "./support/scale-plans.ts";
import { benchDatabase, productWithPlans } from "./support/database.ts";

const SIZES = (process.env.BENCH_SIZES ?? "1000,10000,100000").split(",").map(Number);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 300);
// A p99 of 500 sessions is their 5th slowest: one stall of the machine spanning a few sessions
// decided it. 2,000 take a few seconds a phase.
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 2_000);
const BATCHES = Number(process.env.BENCH_BATCHES ?? 10);
const BATCH = Number(process.env.BENCH_BATCH ?? 1_000);
const BATCH_USERS = Number(process.env.BENCH_BATCH_USERS ?? 100);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
const SEED_CONCURRENCY = Number(process.env.BENCH_SEED_CONCURRENCY ?? 16);
/** Limits on the plan, 0-4 (docs/api.md "Windows and rate limits"). */
const WINDOWS = Number(process.env.BENCH_WINDOWS ?? 4);
const TEAMS = Number(process.env.BENCH_TEAMS ?? 0);
const SIGNUP_SESSIONS = process.env.BENCH_SIGNUP_SESSIONS === "1";
const TEAM_ROUNDS = Number(process.env.BENCH_TEAM_ROUNDS ?? 2);
const IDLE_SETTLE_MS = 2_000;
/** BENCH_SESSION_BLOCK=250: each idle-sessions phase also printed by its place, p50/p99 of each block of that many calls (how a phase's time moves within it). */
const SESSION_BLOCK = Number(process.env.BENCH_SESSION_BLOCK ?? 0);

const database = await benchDatabase("scale");
const mongoUrl = database.url;
const dbPrefix = `bench_scale_${Date.now()}`;
/** A stack as its own all-in-one process on the bench's databases. */
interface Stack {
  apiUrl: string;
  rpcUrl: string;
  close(): Promise<void>;
}

async function startStack(inProcessRpc: boolean): Promise<Stack> {
  // BENCH_AIO_NODE_OPTIONS: the measured (in-process) stack's NODE_OPTIONS, to profile it (`--cpu-prof --cpu-prof-dir=<dir>`).
  const nodeOptions = inProcessRpc ? process.env.BENCH_AIO_NODE_OPTIONS : undefined;
  const { proc, api, rpcBase } = await startAllInOne({ MONGODB_URL: mongoUrl, MONGODB_DB_PREFIX: dbPrefix, RPC_IN_PROCESS: String(inProcessRpc), NODE_OPTIONS: nodeOptions });
  return { apiUrl: api.baseUrl, rpcUrl: rpcBase, close: async () => void (await proc.stop()) };
}

const stack = await startStack(true);
const mongo = await connectMongo(mongoUrl);
const users = new UserStore(mongo.db(`${dbPrefix}_plans`), { logger: createLogger("bench-scale", "warn") });
const subscribers = new SubscriberStore(mongo.db(`${dbPrefix}_plans`));
const teamMembers = new PlanMemberStore(mongo.db(`${dbPrefix}_plans`), "team_members");
const teamCounts = new SubscriberStore(mongo.db(`${dbPrefix}_plans`), "team_member_counts");

const userId = (i: number) => `user-${i}`;
const random = (n: number) => Math.floor(Math.random() * n);

const anon = new Api(stack.apiUrl);
const now = new Date();
const periodStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
const periodEnd = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
const period = { period_start: periodStart.toISOString(), period_end: periodEnd.toISOString() };

/** One product of the bench: its users on plan "pro", and in the team case members of its teams. */
interface BenchProduct {
  id: string;
  api: Api;
  plan: { id: string; name: string };
  /** Service team ids by team index (empty without teams). */
  teams: { id: string; external: string }[];
}

async function createProduct(name: string, teams: number): Promise<BenchProduct> {
  const { productId, api, plans } = await productWithPlans(anon, name, scalePlans(WINDOWS));
  const [plan, teamPlan] = [plans[0]!, plans[1]!];
  const made = await pMap(
    Array.from({ length: teams }, (_, t) => `team-${t}`),
    async (external) => {
      const team = await api.post("/teams", { external_team_id: external, name: external });
      if (team.status !== 201) throw new Error(`team: ${team.status} ${JSON.stringify(team.body)}`);
      const sub = await api.post(`/teams/${external}/subscription`, { plan_id: teamPlan.id, ...period });
      if (sub.status !== 200) throw new Error(`team subscription: ${sub.status} ${JSON.stringify(sub.body)}`);
      return { id: team.body.service_team_id as string, external };
    },
    { concurrency: CONCURRENCY },
  );
  return { id: productId, api, plan, teams: made };
}

const main = await createProduct("bench scale", 0);
const withTeams = TEAMS > 0 ? await createProduct("bench scale teams", TEAMS) : undefined;
const { api, plan } = main;
const productId = main.id;
const teamOf = (p: BenchProduct, i: number) => p.teams[i % p.teams.length];

/**
 * Users [from, to) written with the plans store's own functions; in a product with teams, each
 * also put in its team as SetUserTeam writes it (member list, membership entry, member count).
 */
async function seed(p: BenchProduct, from: number, to: number): Promise<void> {
  await pMap(
    Array.from({ length: to - from }, (_, k) => from + k),
    async (i) => {
      await users.insert(p.id, userId(i), null);
      await users.appendSubscription(p.id, userId(i), {
        plan_id: p.plan.id,
        plan_name: p.plan.name,
        billing_subscription_id: null,
        period_start: periodStart,
        period_end: periodEnd,
        effective_at: new Date(),
      });
      await subscribers.move(p.id, null, p.plan.id);
      const team = teamOf(p, i);
      if (team) {
        const entry = { id: randomUUID(), team_id: team.id, external_team_id: team.external, effective_at: new Date() };
        await teamMembers.add(p.id, team.id, userId(i), entry.id);
        await users.appendMembership(p.id, userId(i), entry);
        await teamCounts.move(p.id, null, team.id);
      }
    },
    { concurrency: SEED_CONCURRENCY },
  );
}

/** The session each window user's client read right after its sign-up (createWindow), ms. */
const signUpSessions: number[] = [];

/**
 * Users [from, to) through the REST API, as a product signs them up (with SIGNUP_SESSIONS each
 * followed by its first session, as the client library reads it when it starts serving the
 * user); users per second.
 */
async function createWindow(p: BenchProduct, from: number, to: number): Promise<number> {
  const t = performance.now();
  await pMap(
    Array.from({ length: to - from }, (_, k) => from + k),
    async (i) => {
      const created = await p.api.post("/users", { external_user_id: userId(i) });
      if (created.status !== 201) throw new Error(`create ${i}: ${created.status}`);
      const sub = await p.api.post(`/users/${userId(i)}/subscription`, { plan_id: p.plan.id, ...period });
      if (sub.status !== 200) throw new Error(`subscribe ${i}: ${sub.status} ${JSON.stringify(sub.body)}`);
      const team = teamOf(p, i);
      if (team) {
        const joined = await p.api.put(`/users/${userId(i)}/team`, { team_id: team.external });
        if (joined.status !== 200) throw new Error(`team ${i}: ${joined.status} ${JSON.stringify(joined.body)}`);
      }
      if (!SIGNUP_SESSIONS) return;
      const s = performance.now();
      const session = await p.api.get(`/users/${userId(i)}/session`);
      if (session.status !== 200) throw new Error(`session ${i}: ${session.status}`);
      if (!team) signUpSessions.push(performance.now() - s);
    },
    { concurrency: CONCURRENCY },
  );
  return ((to - from) * 1000) / (performance.now() - t);
}

const summary = (times: number[]) => {
  times.sort((a, b) => a - b);
  return { p50: pct(times, 50), p99: pct(times, 99) };
};

type Way = "in-process" | "gRPC";
type Timing = { p50: number; p99: number };

/** BENCH_SESSIONS rounds, each running every probe once on a random user, so that all meet the same load. */
async function timeAlternating(size: number, probes: Record<string, (u: string) => Promise<unknown>>): Promise<Record<string, Timing>> {
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(probes).map((k) => [k, []]));
  for (let k = 0; k < SESSIONS; k++) {
    for (const [name, run] of Object.entries(probes)) {
      const t = performance.now();
      await run(userId(random(size)));
      times[name]!.push(performance.now() - t);
    }
  }
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, summary(v)]));
}

/** The session through each stack's gateway, alternating, each on another random user (timed by the session client). */
async function sessions(size: number, apis: Record<Way, Api>): Promise<Record<Way, Timing>> {
  const ways = Object.keys(apis) as Way[];
  const calls = Array.from({ length: SESSIONS }, () => ways.map((_, i): SessionCall => [i, userId(random(size))])).flat();
  return byTurn(ways, await timeSessions(ways.map((w) => sessionApi(apis[w])), calls));
}

/**
 * Where a session's milliseconds go, each part timed on random users, each way (in-process,
 * gRPC) side by side: the REST call (gateway auth from its cache, then ingestion's
 * GetSession), GetSession called directly (the plans service's ResolveUsers, then the counter
 * read), ResolveUsers of one user, a trivial call (Health.Check "liveness": the transport
 * alone), and, the same for both ways, GET /readyz (the HTTP round trip with no RPC behind it)
 * and the three database reads underneath by `_id` (the user document and its plan, read by
 * ResolveUsers; the counter, read by GetSession) straight from the bench's own client.
 */
async function sessionParts(size: number, stacks: Record<Way, Stack>, apis: Record<Way, Api>): Promise<Record<string, Timing>> {
  const counters = mongo.db(`${dbPrefix}_ingestion`).collection<{ _id: string }>("counters");
  const userDocs = mongo.db(`${dbPrefix}_plans`).collection<{ _id: string }>("users");
  const planDocs = mongo.db(`${dbPrefix}_plans`).collection<{ _id: string }>("plans");
  const probes: Record<string, (u: string) => Promise<unknown>> = {};
  for (const way of ["in-process", "gRPC"] as const) {
    const ingestionRpc = rpcClient(IngestionService, stacks[way].rpcUrl);
    const plansRpc = rpcClient(PlansService, stacks[way].rpcUrl);
    const health = rpcClient(Health, stacks[way].rpcUrl);
    probes[`${way} REST GET /session`] = (u) => apis[way].get(`/users/${u}/session`);
    probes[`${way} GetSession`] = (u) => ingestionRpc.getSession({ productId, userId: u });
    probes[`${way} ResolveUsers (1)`] = (u) => plansRpc.resolveUsers({ productId, externalUserIds: [u] });
    probes[`${way} Health.Check`] = () => health.check({ service: LIVENESS });
  }
  const readyz = stack.apiUrl.replace(/\/api\/v1$/, "/readyz");
  probes["REST GET /readyz"] = () => fetch(readyz).then((r) => r.text());
  probes["user findOne by _id"] = (u) => userDocs.findOne({ _id: `${productId}:${u}` });
  probes["plan findOne by _id"] = () => planDocs.findOne({ _id: plan.id });
  probes["counter findOne by _id"] = (u) => counters.findOne({ _id: counterId(productId, u, periodStart) });
  return timeAlternating(size, probes);
}

/** Sessions the in-process gateway has answered in all, and within 5 ms, from its histogram. */
async function gatewaySessions(): Promise<{ all: number; fast: number }> {
  const text = await (await fetch(`${stack.rpcUrl}/metrics`)).text();
  const count = (le: string) =>
    [...text.matchAll(/^meter_http_request_duration_seconds_bucket\{([^}]*)\} (\S+)$/gm)]
      .filter((m) => m[1]!.includes('route="/api/v1/users/:user_id/session"') && m[1]!.includes(`le="${le}"`))
      .reduce((sum, m) => sum + Number(m[2]), 0);
  return { all: count("+Inf"), fast: count("0.005") };
}

/** Waits until the stack has handed over everything it ingested: both outboxes empty twice in a row. */
async function idle(): Promise<number> {
  const metrics = `${stack.rpcUrl}/metrics`;
  const t = performance.now();
  for (let emptyInARow = 0; emptyInARow < 2 && performance.now() - t < 120_000; ) {
    const text = await (await fetch(metrics)).text();
    const depths = [...text.matchAll(/^meter_outbox_depth\{[^}]*\} (\S+)$/gm)].map((m) => Number(m[1]));
    emptyInARow = depths.length > 0 && depths.every((d) => d === 0) ? emptyInARow + 1 : 0;
    await new Promise((r) => setTimeout(r, 250));
  }
  await new Promise((r) => setTimeout(r, IDLE_SETTLE_MS));
  return (performance.now() - t) / 1000;
}

const sessionApi = (a: Api): SessionApi => ({ baseUrl: a.baseUrl, key: a.key });

/** Times of calls made to `names` in turn (call k to names[k mod n]), summarised by name. */
const byTurn = <K extends string>(names: readonly K[], times: readonly number[]) =>
  Object.fromEntries(names.map((n, i) => [n, summary(times.filter((_, k) => k % names.length === i))])) as Record<K, Timing>;

/**
 * The idle sessions of `users` (each product in turn on the same user), timed from the lean
 * session client (support/session-client.ts), whose heap holds none of the seeding's. The
 * "refresh" column times the same users again in another order: the client library's refresh
 * of a user it serves.
 */
async function idleSessions<K extends string>(users: readonly string[], products: Record<K, SessionApi>, phase: string): Promise<Record<K, Timing>> {
  const names = Object.keys(products) as K[];
  const apis = Object.values(products) as SessionApi[];
  const times = await timeSessions(apis, users.flatMap((u) => apis.map((_, i): SessionCall => [i, u])));
  if (SESSION_BLOCK > 0) {
    const blocks = [];
    for (let b = 0; b < times.length; b += SESSION_BLOCK) blocks.push(ms(summary(times.slice(b, b + SESSION_BLOCK))));
    console.log(`  ${phase}, by blocks of ${SESSION_BLOCK} calls, p50/p99 ms: ${blocks.join("  ")}`);
  }
  return byTurn(names, times);
}

const randomUsers = (size: number) => Array.from({ length: SESSIONS }, () => userId(random(size)));
const shuffled = (users: readonly string[]) => [...users].sort(() => Math.random() - 0.5);

async function resolveThousand(size: number): Promise<number> {
  const plansRpc = rpcClient(PlansService, stack.rpcUrl);
  const times: number[] = [];
  for (let k = 0; k < 3; k++) {
    const ids = Array.from({ length: 1000 }, () => userId(random(size)));
    const t = performance.now();
    await plansRpc.resolveUsers({ productId, externalUserIds: ids });
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b)[1]!;
}

async function ingestion(size: number, p: BenchProduct = main): Promise<{ eps: number; p50: number; p99: number; retries: number }> {
  const latencies: number[] = [];
  let retries = 0;
  const t = performance.now();
  await pMap(
    Array.from({ length: BATCHES }, (_, b) => b),
    async (b) => {
      const users = Array.from({ length: BATCH_USERS }, () => userId(random(size)));
      const events = usageBatch(users, BATCH, `s-${b}`);
      const s = performance.now();
      for (let attempt = 1; ; attempt++) {
        const res = await p.api.post("/events/batch", events);
        if (res.status === 200 && res.body.accepted + res.body.duplicates === BATCH) break;
        if ((res.status !== 503 && res.status !== 429) || attempt >= 5) throw new Error(`batch ${b}: ${res.status} ${JSON.stringify(res.body)}`);
        retries++;
        // A busy service (429) says when to come back.
        if (res.status === 429) await new Promise((r) => setTimeout(r, Number(res.headers.get("retry-after") ?? 1) * 1000));
      }
      latencies.push(performance.now() - s);
    },
    { concurrency: CONCURRENCY },
  );
  const seconds = (performance.now() - t) / 1000;
  latencies.sort((a, b) => a - b);
  return { eps: (BATCHES * BATCH) / seconds, p50: pct(latencies, 50), p99: pct(latencies, 99), retries };
}

console.log(
  `bench:scale on ${database.embedded ? "the embedded database (FerretDB over SQLite)" : mongoUrl}; all-in-one, calls between modules in-process; ` +
    `window ${WINDOW} users, ${SESSIONS} sessions, ${BATCHES} batches of ${BATCH} events for ${BATCH_USERS} users each, concurrency ${CONCURRENCY}; ` +
    `sessions timed through ${SESSION_CLIENT === "fetch" ? "fetch" : "undici's Client.request"}; load average ${os.loadavg().map((l) => l.toFixed(1)).join(" ")} on ${os.cpus().length} cores`,
);
console.log(
  "\n   users   created+subscribed/s   session p50/p99 ms: right after   beside gRPC   (over gRPC)   alone, idle   refresh, idle   gateway <= 5 ms   idle after s   resolve 1000 ms   ingest events/s   vs first   batch p50 ms   batch p99 ms   seeded in s   503 retries   load avg",
);
const ms = (t: Timing) => `${t.p50.toFixed(2)}/${t.p99.toFixed(2)}`;
let have = 0;
let firstEps: number | undefined;
const profiles: string[] = [];
const teamLines: string[] = [];
const signUpLines: string[] = [];

const teamParts: string[] = [];

/**
 * Where a member's first session goes, beside a user in no team (each probe on another random
 * user, alternating): GetSession straight to ingestion (the plans service's ResolveUsers, then
 * the counter's read beside it and, for a member, the team's documents after it) and
 * ResolveUsers of one user alone (for a member it also reads the team and its plan).
 */
async function memberParts(size: number, teams: BenchProduct): Promise<Record<string, Timing>> {
  const ingestionRpc = rpcClient(IngestionService, stack.rpcUrl);
  const plansRpc = rpcClient(PlansService, stack.rpcUrl);
  return timeAlternating(size, {
    "GetSession, no team": (u) => ingestionRpc.getSession({ productId, userId: u }),
    "GetSession, member": (u) => ingestionRpc.getSession({ productId: teams.id, userId: u }),
    "ResolveUsers (1), no team": (u) => plansRpc.resolveUsers({ productId, externalUserIds: [u] }),
    "ResolveUsers (1), member": (u) => plansRpc.resolveUsers({ productId: teams.id, externalUserIds: [u] }),
  });
}

/**
 * The team case at one size: sessions of both products alternating on the same random users
 * (then the same users again in another order), and ingestion in alternating rounds, so that
 * both meet the same machine.
 */
async function teamCase(size: number, teams: BenchProduct): Promise<string> {
  await idle();
  // The same users in both products, both read again in another order (alternating too).
  const products = { plain: sessionApi(api), teams: { ...sessionApi(teams.api), team: true } };
  const users = randomUsers(size);
  const alone = await idleSessions(users, products, `${size} users, team case, alone (plain and teams in turn)`);
  const { plain: refreshPlain, teams: refreshTeams } = await idleSessions(shuffled(users), products, `${size} users, team case, refresh (plain and teams in turn)`);
  teamParts.push([`${String(size).padStart(8)}  load avg ${os.loadavg()[0]!.toFixed(1)}`, ...Object.entries(await memberParts(size, teams)).map(([k, v]) => `          ${k.padEnd(34)} ${ms(v)}`)].join("\n"));
  let plainEps = 0;
  let teamEps = 0;
  for (let round = 0; round < TEAM_ROUNDS; round++) {
    plainEps += (await ingestion(size, main)).eps / TEAM_ROUNDS;
    teamEps += (await ingestion(size, teams)).eps / TEAM_ROUNDS;
  }
  return (
    `${String(size).padStart(8)}${ms(alone.plain!).padStart(33)}${ms(alone.teams!).padStart(14)}${ms(refreshPlain).padStart(26)}${ms(refreshTeams).padStart(14)}` +
    `${plainEps.toFixed(0).padStart(28)}${teamEps.toFixed(0).padStart(8)}${(teamEps / plainEps).toFixed(2).padStart(17)}${os.loadavg()[0]!.toFixed(1).padStart(11)}`
  );
}
for (const size of SIZES) {
  const window = Math.min(WINDOW, size - have);
  const s = performance.now();
  await seed(main, have, size - window);
  const seeded = (performance.now() - s) / 1000;
  signUpSessions.length = 0;
  const gatewayBefore = SIGNUP_SESSIONS ? await gatewaySessions() : null;
  const rate = await createWindow(main, size - window, size);
  if (gatewayBefore) {
    const gatewayAfter = await gatewaySessions();
    const fast = (100 * (gatewayAfter.fast - gatewayBefore.fast)) / Math.max(1, gatewayAfter.all - gatewayBefore.all);
    signUpLines.push(`${String(size).padStart(8)}${String(signUpSessions.length).padStart(10)}${ms(summary(signUpSessions)).padStart(18)}${`${fast.toFixed(1)}%`.padStart(18)}`);
  }
  if (withTeams) {
    await seed(withTeams, have, size - window);
    await createWindow(withTeams, size - window, size);
  }
  have = size;
  const resolve = await resolveThousand(size);
  const ingest = await ingestion(size);
  firstEps ??= ingest.eps;
  // Right after the window's users were created and subscribed and the burst ingested, this
  // stack alone (the gRPC stack below starts after it): what a product's sessions meet while
  // the stack still relays and rolls up what it was just sent.
  const rightAfter = (await idleSessions(randomUsers(size), { "in-process": sessionApi(api) }, `${size} users, right after`))["in-process"];
  // The gRPC stack (a second set of modules and a gateway on the same databases) lives only
  // while sessions are timed, so the ingestion figures meet one stack's background work.
  const grpcStack = await startStack(false);
  const stacks: Record<Way, Stack> = { "in-process": stack, gRPC: grpcStack };
  const apis: Record<Way, Api> = { "in-process": api, gRPC: new Api(grpcStack.apiUrl, api.key) };
  const session = await sessions(size, apis);
  const parts = await sessionParts(size, stacks, apis);
  await grpcStack.close();
  const drained = await idle();
  const before = await gatewaySessions();
  const users = randomUsers(size);
  const alone = (await idleSessions(users, { "in-process": sessionApi(api) }, `${size} users, alone, idle`))["in-process"];
  const after = await gatewaySessions();
  const refresh = (await idleSessions(shuffled(users), { "in-process": sessionApi(api) }, `${size} users, refresh, idle`))["in-process"];
  const gatewayFast = (100 * (after.fast - before.fast)) / Math.max(1, after.all - before.all);
  profiles.push(
    [`${String(size).padStart(8)}  load avg ${os.loadavg()[0]!.toFixed(1)}`, ...Object.entries(parts).map(([k, v]) => `          ${k.padEnd(28)} ${ms(v)}`)].join("\n"),
  );
  console.log(
    `${String(size).padStart(8)}${rate.toFixed(1).padStart(23)}${ms(rightAfter).padStart(34)}${ms(session["in-process"]).padStart(14)}${ms(session.gRPC).padStart(14)}` +
      `${ms(alone).padStart(15)}${ms(refresh).padStart(17)}${`${gatewayFast.toFixed(1)}%`.padStart(18)}${drained.toFixed(1).padStart(15)}` +
      `${resolve.toFixed(0).padStart(18)}${ingest.eps.toFixed(0).padStart(18)}${(ingest.eps / firstEps).toFixed(2).padStart(11)}${ingest.p50.toFixed(0).padStart(15)}${ingest.p99.toFixed(0).padStart(15)}${seeded.toFixed(1).padStart(14)}${String(ingest.retries).padStart(14)}${os.loadavg()[0]!.toFixed(1).padStart(11)}`,
  );
  if (withTeams) teamLines.push(await teamCase(size, withTeams));
}
if (SIGNUP_SESSIONS) {
  console.log("\nthe first session right after each window user's sign-up and subscription (the bench's other clients signing users up meanwhile):");
  console.log("   users  sessions   p50 / p99 ms   gateway <= 5 ms");
  for (const line of signUpLines) console.log(line);
}
if (withTeams) {
  console.log(`\nteam case: ${TEAMS} teams (user i in team i mod ${TEAMS}), sessions and ingestion alternating with the product without teams, same users and plan:`);
  console.log("   users   session alone, idle: no teams   teams   refresh, idle: no teams   teams   ingest events/s: no teams   teams   teams/no teams   load avg");
  for (const line of teamLines) console.log(line);
  console.log("\nteam case, where a first session goes, p50/p99 ms (calls straight to the services, random users, mostly not read before):");
  for (const line of teamParts) console.log(line);
}
console.log("\nsession parts, p50/p99 ms (after ingestion, so counters exist):");
for (const line of profiles) console.log(line);
console.log(
  "\ntargets: session p99 <= 5 ms on a stack serving sessions (right after the window's sign-ups and the burst; alone, idle; refresh, idle: " +
    "'beside gRPC' also meets a second stack just started on the same cores); ingestion at 100k users at least 0.80 of its rate at 1k (vs first); " +
    "team case: session p99 <= 5 ms and ingestion with teams at least 0.90 of the rate without",
);
closeSessionClient();
await mongo.close();
await stack.close();
await database.stop();
process.exit(0);
