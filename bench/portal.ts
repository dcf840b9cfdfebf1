// `npm run bench:portal`: GET /portal/me (what an end user's page and the <meter-usage> widget
// read) at BENCH_USERS (100,000) users of one product. All-in-one stack as `npm start` runs it,
// as its own process, on the embedded database (or MONGODB_URL). Target: p95 <= 20 ms.
// Users are seeded with the plans service's own store (UserStore.insertMany, 1,000 per command);
// every 10th is subscribed to "pro" (a period cap, a model cap and a daily window) with the
// writes SetSubscription makes, and every user holds a live portal token (the tenancy store's
// document shape, inserted 1,000 at a time), so the tokens' collection is as large as the users'.
// BENCH_REQUESTS users of "pro" get usage events and a few gate events through the API and a
// token minted through the API; then each of their tokens reads GET /portal/me once, in turn:
// every read is a token the gateway has not seen, as a page view's is (the widget's refresh a
// minute later finds its 2 s authentication cache expired too). Beside each, alternating, the
// same user's GET /users/{id}/session with the product's API key (authentication cached): what
// this machine gives the cheapest per-user read at the same moment, as a reference.
//   BENCH_USERS=100000 BENCH_REQUESTS=300 npm run bench:portal
import { randomBytes, randomUUID } from "node:crypto";
import os from "node:os";
import pMap from "p-map";
import { hashPortalToken } from "@meter/lib/portal-tokens";
import type { PortalTokenDoc } from "../services/tenancy/store/portal-tokens.ts";
import { pct } from "./support/stats.ts";
import { benchAllInOne, productWithPlans } from "./support/database.ts";
import { planStores, subscribeInStores } from "./support/plans-stores.ts";

const USERS = Number(process.env.BENCH_USERS ?? 100_000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 300);
const SEED_CHUNK = 1_000;
const PRO_EVERY = 10;
const DAY = 86_400_000;

const { api: anon, serviceDb, stop } = await benchAllInOne("portal");
const stores = planStores(await serviceDb("plans"), "portal");
const tokens = (await serviceDb("tenancy")).collection<PortalTokenDoc>("portal_tokens");

const { productId, api, plans } = await productWithPlans(anon, "bench portal", [
  { name: "pro", max_spend_per_period: 100, model_limits: { "gpt-4o": { max_tokens_per_period: 10_000_000 } }, limits: [{ name: "daily", metric: "spend", max: 10, window: "day" }] },
]);
const pro = plans[0]!;

const userId = (i: number) => `user-${String(i).padStart(6, "0")}`;

let t = performance.now();
for (let from = 0; from < USERS; from += SEED_CHUNK) {
  const n = Math.min(SEED_CHUNK, USERS - from);
  await stores.users.insertMany(productId, Array.from({ length: n }, (_, k) => ({ externalUserId: userId(from + k), name: null })));
  const now = new Date();
  await tokens.insertMany(
    Array.from({ length: n }, (_, k) => ({
      _id: hashPortalToken(`mpt_${randomBytes(32).toString("base64url")}`),
      product_id: productId,
      user_id: userId(from + k),
      created_at: now,
      expires_at: new Date(now.getTime() + DAY),
    })),
  );
}
const insertSeconds = (performance.now() - t) / 1000;
t = performance.now();
const periodStart = new Date(Date.now() - DAY);
const periodEnd = new Date(Date.now() + 20 * DAY);
await pMap(
  Array.from({ length: Math.ceil(USERS / PRO_EVERY) }, (_, k) => k * PRO_EVERY),
  (i) => subscribeInStores(stores, productId, userId(i), pro, { start: periodStart, end: periodEnd, effectiveAt: periodStart }),
  { concurrency: 16 },
);
const subscribeSeconds = (performance.now() - t) / 1000;

// The measured users: REQUESTS of the "pro" ones, at random, each with usage on two models, three
// gate events and a token minted through the API.
const measured = [...new Set(Array.from({ length: REQUESTS * 3 }, () => userId(Math.floor(Math.random() * (USERS / PRO_EVERY)) * PRO_EVERY)))].slice(0, REQUESTS);
const now = new Date().toISOString();
for (let i = 0; i < measured.length; i += 100) {
  const batch = measured.slice(i, i + 100);
  const events = batch.flatMap((u) => ["gpt-4o", "gpt-4o-mini"].map((model) => ({ id: randomUUID(), user_id: u, timestamp: now, model, input_tokens: 1_000, output_tokens: 100, total_tokens: 1_100, cost_tokens: 0.5, cost_total: 0.5 })));
  const ingested = await api.post("/events/batch", events);
  if (ingested.status !== 200) throw new Error(`events: ${ingested.status} ${JSON.stringify(ingested.body)}`);
  const gates = batch.flatMap((u) => [0, 1, 2].map((k) => ({ id: randomUUID(), user_id: u, timestamp: new Date(Date.now() - k * 60_000).toISOString(), status: "soft_gate", gate_reason: "total_spend", usage_pct: 0.8, current_value: 80, limit_value: 100, blocked: false })));
  const gated = await api.post("/gate-events/batch", gates);
  if (gated.status !== 200) throw new Error(`gate events: ${gated.status} ${JSON.stringify(gated.body)}`);
}
const minted: string[] = [];
for (const u of measured) {
  const res = await api.post(`/users/${u}/portal-tokens`, { ttl_seconds: 3_600 });
  if (res.status !== 201) throw new Error(`mint: ${res.status} ${JSON.stringify(res.body)}`);
  minted.push(res.body.token);
}
console.log(
  `seeded ${USERS} users and ${USERS} portal tokens in ${insertSeconds.toFixed(1)} s, ${Math.ceil(USERS / PRO_EVERY)} subscribed to pro in ${subscribeSeconds.toFixed(1)} s; ` +
    `${measured.length} measured users with usage, gate events and a token minted through the API`,
);

// A few reads first (other users' tokens), so connections are warm as in a running service.
for (const token of minted.slice(0, 10)) await api.withKey(token).get("/portal/me");
const ms: number[] = [];
const sessionMs: number[] = [];
const loadBefore = os.loadavg();
for (const [i, token] of minted.entries()) {
  let start = performance.now();
  const res = await api.withKey(token).get("/portal/me");
  const took = performance.now() - start;
  if (res.status !== 200) throw new Error(`GET /portal/me: ${res.status} ${JSON.stringify(res.body)}`);
  if (res.body.user_id !== measured[i] || res.body.limits.length !== 3) throw new Error(`GET /portal/me: unexpected ${JSON.stringify(res.body).slice(0, 300)}`);
  start = performance.now();
  const session = await api.get(`/users/${measured[i]}/session`);
  const sessionTook = performance.now() - start;
  if (session.status !== 200) throw new Error(`GET session: ${session.status}`);
  if (i >= 10) {
    ms.push(took);
    sessionMs.push(sessionTook);
  }
}
const line = (name: string, xs: number[]) => {
  xs.sort((a, b) => a - b);
  console.log(`${name.padEnd(52)} p50 ${pct(xs, 50).toFixed(2).padStart(7)} ms   p95 ${pct(xs, 95).toFixed(2).padStart(7)} ms   p99 ${pct(xs, 99).toFixed(2).padStart(7)} ms`);
};
const load = (l: number[]) => l.map((x) => x.toFixed(1)).join(" ");
console.log(`at ${USERS} users, ${ms.length} users, alternating (load average before ${load(loadBefore)}, after ${load(os.loadavg())})`);
line("GET /portal/me, a token read for the first time", ms);
line("GET /users/{id}/session, API key (reference)", sessionMs);
console.log("target: GET /portal/me p95 <= 20 ms");

await stop();
