// `npm run bench:users`: GET /users (the console's Users screen) at BENCH_USERS (100,000) users
// of one product. All-in-one stack as `npm start` runs it, as its own process, on the embedded
// database (or MONGODB_URL). Prints p50/p95 of BENCH_REQUESTS sequential requests for each of:
//   - the first page, no filter (limit 50);
//   - a prefix: `prefix=user-NNNN` at random (100 users match each; a page of 50 and a cursor);
//   - a later page: a cursor at a random position of the whole listing;
//   - a plan filter: `plan=gold` (every 10th user is on it), its first page and a later page;
//   - a prefix and a plan together.
// Every row of every page also carries its current period's spend (one GetPeriodSpends call
// per page). Users are seeded with the plans service's own store (UserStore.insertMany, 1,000
// per command); every 10th is subscribed to "gold" with the writes SetSubscription makes
// (PlanMemberStore.add, UserStore.appendSubscription), the others to nothing; a few hundred
// get usage events through the API, so some counters exist.
//   BENCH_USERS=100000 BENCH_REQUESTS=300 npm run bench:users
import { randomUUID } from "node:crypto";
import os from "node:os";
import pMap from "p-map";
import { encodeCursor } from "../services/plans/handlers/list-users.ts";
import { pct } from "./support/stats.ts";
import { benchAllInOne, productWithPlans } from "./support/database.ts";
import { planStores, subscribeInStores } from "./support/plans-stores.ts";

const USERS = Number(process.env.BENCH_USERS ?? 100_000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 300);
const SEED_CHUNK = 1_000;
const GOLD_EVERY = 10;

const { api: anon, serviceDb, stop } = await benchAllInOne("users");
const stores = planStores(await serviceDb("plans"), "users");

const { productId, api, plans } = await productWithPlans(anon, "bench users", [{ name: "gold" }, { name: "basic" }]);
const gold = plans[0]!;

const userId = (i: number) => `user-${String(i).padStart(6, "0")}`;
const random = (n: number) => Math.floor(Math.random() * n);

let t = performance.now();
for (let from = 0; from < USERS; from += SEED_CHUNK) {
  const chunk = Array.from({ length: Math.min(SEED_CHUNK, USERS - from) }, (_, k) => ({ externalUserId: userId(from + k), name: null }));
  await stores.users.insertMany(productId, chunk);
}
const insertSeconds = (performance.now() - t) / 1000;
t = performance.now();
await pMap(
  Array.from({ length: Math.ceil(USERS / GOLD_EVERY) }, (_, k) => k * GOLD_EVERY),
  (i) => subscribeInStores(stores, productId, userId(i), gold, { start: null, end: null }),
  { concurrency: 16 },
);
const subscribeSeconds = (performance.now() - t) / 1000;
// Usage for the first 500 users, so the first pages' spends come from counters.
const now = new Date().toISOString();
const events = Array.from({ length: 500 }, (_, i) => ({
  id: randomUUID(), user_id: userId(i), timestamp: now, model: "gpt-4o", input_tokens: 100, output_tokens: 10, total_tokens: 110, cost_tokens: 0.01, cost_total: 0.01,
}));
const ingested = await api.post("/events/batch", events);
if (ingested.status !== 200) throw new Error(`events: ${ingested.status} ${JSON.stringify(ingested.body)}`);
console.log(`seeded ${USERS} users in ${insertSeconds.toFixed(1)} s, ${Math.ceil(USERS / GOLD_EVERY)} subscribed to gold in ${subscribeSeconds.toFixed(1)} s`);


async function time(name: string, query: () => Record<string, string>, expectRows: (n: number) => boolean): Promise<void> {
  const ms: number[] = [];
  // A few requests first, so connections and caches are warm as in a running console.
  const warmup = Math.min(10, REQUESTS);
  for (let i = 0; i < REQUESTS + warmup; i++) {
    const q = new URLSearchParams(query());
    const start = performance.now();
    const res = await api.get(`/users?${q}`);
    const took = performance.now() - start;
    if (res.status !== 200) throw new Error(`${name} ${q}: ${res.status} ${JSON.stringify(res.body)}`);
    if (!expectRows(res.body.users.length)) throw new Error(`${name} ${q}: ${res.body.users.length} rows`);
    if (i >= warmup) ms.push(took);
  }
  ms.sort((a, b) => a - b);
  console.log(`${name.padEnd(44)} p50 ${pct(ms, 50).toFixed(2).padStart(7)} ms   p95 ${pct(ms, 95).toFixed(2).padStart(7)} ms`);
}

const four = () => String(random(Math.ceil(USERS / 100))).padStart(4, "0");
console.log(`GET /users at ${USERS} users, ${REQUESTS} requests each (load average ${os.loadavg().map((l) => l.toFixed(1)).join(" ")})`);
await time("first page, no filter (50)", () => ({}), (n) => n === 50);
await time("prefix user-NNNN (first page of 100 matches)", () => ({ prefix: `user-${four()}` }), (n) => n === 50);
await time("later page by cursor (random position)", () => ({ cursor: encodeCursor(userId(random(USERS - 100))) }), (n) => n === 50);
await time("plan=gold, first page", () => ({ plan: "gold" }), (n) => n === 50);
await time("plan=gold, later page by cursor", () => ({ plan: "gold", cursor: encodeCursor(userId(random(USERS - 1000))) }), (n) => n === 50);
await time("plan=gold and prefix user-NNNN (10 matches)", () => ({ plan: "gold", prefix: `user-${four()}` }), (n) => n === 10);
await time("limit=200, no filter", () => ({ limit: "200", cursor: encodeCursor(userId(random(USERS - 300))) }), (n) => n === 200);
console.log(`load average after: ${os.loadavg().map((l) => l.toFixed(1)).join(" ")}`);

await stop();
