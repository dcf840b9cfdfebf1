// What one product at its limits costs another (docs/operations.md, "Limits"): a product's GET
// /config/plans before and after a neighbour fills its 50 plans (BENCH_FULL_PLANS of them
// with three maps of 1,000 names of 255 characters; one fits in a product's 1 MiB of plans), and gate-event batches spread over hours:
// 10,000 events in 10,000 future hours (refused) and one event in each hour of the last 89
// days (accepted), with the page reads of a filter that matches only the oldest event.
//
//   npm run bench:neighbours            BENCH_FULL_PLANS (default 1), BENCH_READS (default 100)
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { startTestStack } from "../test/support/stack.ts";
import type { Api } from "../test/support/http.ts";
import { stopTestDatabase } from "../test/support/database.ts";

const FULL_PLANS = Number(process.env.BENCH_FULL_PLANS ?? 1);
const READS = Number(process.env.BENCH_READS ?? 100);
const HOUR = 3_600_000;

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const fmt = (ms: number) => ms.toFixed(1);

async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const out = await f();
  return [out, performance.now() - t0];
}

async function listing(api: Api): Promise<string> {
  const times: number[] = [];
  for (let i = 0; i < READS; i++) {
    const [res, ms] = await timed(() => api.get("/config/plans"));
    if (res.status !== 200) throw new Error(`GET /config/plans: ${res.status}`);
    times.push(ms);
  }
  return `p50 ${fmt(pct(times, 50))} ms, p99 ${fmt(pct(times, 99))} ms`;
}

function fullPlan(name: string) {
  const names = Array.from({ length: 1000 }, (_, i) => `${name}-${i}-`.padEnd(255, "x"));
  return {
    name,
    cost_rates: Object.fromEntries(names.map((n) => [n, { input: 1, output: 2 }])),
    model_limits: Object.fromEntries(names.map((n) => [n, { max_tokens_per_period: 1000 }])),
    tool_costs: Object.fromEntries(names.map((n) => [n, 0.5])),
  };
}

const gate = (user: string, at: number, status = "soft_gate") => ({
  id: randomUUID(), user_id: user, timestamp: new Date(at).toISOString(), status, gate_reason: "total_spend", usage_pct: 0.9, current_value: 9, limit_value: 10,
});

const stack = await startTestStack();
try {
  const other = (await stack.newProduct("other")).api;
  await other.post("/config/plans", { plans: [{ name: "basic", cost_rates: { "gpt-4o": { input: 2.5, output: 10 } } }, { name: "pro" }] });
  console.log(`another product's GET /config/plans, neighbour empty: ${await listing(other)}`);

  const neighbour = (await stack.newProduct("neighbour")).api;
  const [, fillMs] = await timed(async () => {
    for (let i = 0; i < FULL_PLANS; i++) await neighbour.post("/config/plans", { plans: [fullPlan(`full-${i}`)] });
    await neighbour.post("/config/plans", { plans: Array.from({ length: 50 - FULL_PLANS }, (_, i) => ({ name: `small-${i}` })) });
  });
  const over = await neighbour.post("/config/plans", { plans: [{ name: "one-more" }] });
  console.log(`neighbour filled to 50 plans (${FULL_PLANS} full) in ${(fillMs / 1000).toFixed(1)} s; the 51st: ${over.status}`);
  console.log(`another product's GET /config/plans, neighbour at its limits: ${await listing(other)}`);
  const [, ownMs] = await timed(() => neighbour.get("/config/plans"));
  const [, againMs] = await timed(() => neighbour.get("/config/plans"));
  console.log(`the neighbour's own GET /config/plans: ${fmt(ownMs)} ms, again (unchanged: its cached listing) ${fmt(againMs)} ms`);

  const gates = (await stack.newProduct("gates")).api;
  const user = `g-${randomUUID()}`;
  await gates.post("/users", { external_user_id: user });
  const now = Date.now();
  const [future, futureMs] = await timed(() => gates.post("/gate-events/batch", Array.from({ length: 10_000 }, (_, i) => gate(user, now + (i + 1) * HOUR))));
  console.log(`10,000 gate events in 10,000 future hours: ${future.status} in ${fmt(futureMs)} ms`);
  const hours = 89 * 24;
  const [spread, spreadMs] = await timed(() =>
    gates.post("/gate-events/batch", Array.from({ length: hours }, (_, i) => gate(user, now - i * HOUR, i === hours - 1 ? "hard_gate" : "soft_gate"))),
  );
  console.log(`${hours} gate events, one per hour of 89 days: ${spread.status} in ${fmt(spreadMs)} ms`);
  const pages: number[] = [];
  let cursor: string | null = null;
  do {
    const [page, ms]: [{ body: { next_cursor: string | null } }, number] = await timed(() => gates.get(`/users/${user}/gate-events?status=hard_gate${cursor ? `&cursor=${cursor}` : ""}`));
    pages.push(ms);
    cursor = page.body.next_cursor;
  } while (cursor);
  console.log(`listing with a filter matching only the oldest event: ${pages.length} pages, each p50 ${fmt(pct(pages, 50))} ms, max ${fmt(Math.max(...pages))} ms`);
} finally {
  await stack.close();
  await stopTestDatabase();
}
