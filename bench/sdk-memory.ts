// Child process of bench/sdk.ts: the product's side alone, so that its heap holds nothing but
// the client library. Loads every user of BENCH_USER_IDS, meters one call each, and prints
// the heap growth per user as JSON. With BENCH_LEASES=1 each call is reserved from a budget
// lease instead (`leases: true`), and the heap is measured again once the idle users' lease
// books are gone.
import { Meter } from "../sdk/typescript/src/index.ts";

const gc = (globalThis as { gc?: () => void }).gc!;
const ids = JSON.parse(process.env.BENCH_USER_IDS!) as string[];
const LEASES = process.env.BENCH_LEASES === "1";
/** Longer than the loads and heap() below: the books are measured before they go idle. */
const LEASE_IDLE_MS = 40_000;
const m = new Meter({
  logger: { warn: () => {} },
  flushIntervalMs: 3_600_000,
  maxQueueSize: ids.length * 2,
  ...(LEASES && { leases: true, leaseIdleMs: LEASE_IDLE_MS }),
});
const call = async (id: string) => {
  if (!LEASES) return void (await m.record(id, { model: "gpt-4o", input_tokens: 1 }));
  (await m.reserve(id, { model: "gpt-4o", input_tokens: 10 })).commit({ input_tokens: 10, output_tokens: 10 });
};
// Code paths and the connection pool (4 concurrent loads) warmed on 4 users before measuring.
const WARM = 4;
await Promise.all(ids.slice(0, WARM).map(call));
await m.flush();
// Each request's AbortSignal.timeout lives until its timer fires (3 s for loads, 10 s for
// deliveries): measured after those, the figure is what a cached user keeps.
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));
const heap = async () => {
  await settle(10_500);
  gc();
  return process.memoryUsage().heapUsed;
};
const before = await heap();
const n = ids.length - WARM;
if (LEASES) {
  for (let i = WARM; i < ids.length; i += 4) await Promise.all(ids.slice(i, i + 4).map(call));
  await m.flush({ timeoutMs: 120_000 });
  const leased = await heap();
  const books = m.stats.leased_users;
  const teams = m.stats.leased_teams;
  while (m.stats.leased_users! > 0 || m.stats.leased_teams! > 0) await settle(500);
  const forgotten = await heap();
  console.log(JSON.stringify({ users: m.stats.users, books, teams, leased: (leased - before) / n, forgotten: (forgotten - before) / n }));
} else {
  for (let i = WARM; i < ids.length; i += 4) await Promise.all(ids.slice(i, i + 4).map((id) => m.guard(id, { model: "gpt-4o" })));
  const loaded = await heap();
  for (const id of ids.slice(WARM)) await m.record(id, { model: "gpt-4o", input_tokens: 10, output_tokens: 10 });
  const queued = await heap();
  await m.flush({ timeoutMs: 120_000 });
  const delivered = await heap();
  console.log(JSON.stringify({ users: m.stats.users, loaded: (loaded - before) / n, queued: (queued - before) / n, delivered: (delivered - before) / n }));
}
await m.shutdown({ timeoutMs: 1 });
