// `npm run bench:plans-cache`: the plans service's user cache under the traffic it is for, past
// its ten-minute backstop. The whole stack in-process on the embedded database (or MONGODB_URL),
// BENCH_USERS (1,000) users signed up through the API, then each user's session read every
// BENCH_REFRESH_MS (60 s, the client library's refreshIntervalMs), spread evenly, for
// BENCH_MINUTES (12). Prints per interval the sessions, their p50 / p99 through the gateway,
// and where the plans service took each user from (meter_plans_cache_reads_total): memory, the
// database (the session waited for the read) or a read ahead in the background.
import { benchPlan, benchProduct, benchUser } from "./support/bench-product.ts";
import { registry } from "@meter/lib/metrics";
import { pct } from "./support/stats.ts";

const USERS = Number(process.env.BENCH_USERS ?? 1_000);
const MINUTES = Number(process.env.BENCH_MINUTES ?? 12);
const REFRESH_MS = Number(process.env.BENCH_REFRESH_MS ?? 60_000);

const bench = await benchProduct("plans-cache");

async function reads(): Promise<Record<string, number>> {
  const metric = await registry.getSingleMetric("meter_plans_cache_reads_total")!.get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.source), v.value]));
}

try {
  const plan = await benchPlan(bench.api, { max_spend_per_period: 100 });
  const users: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = next++; i < USERS; i = next++) users.push(await benchUser(bench.api, plan, `pc-${i}`));
    }),
  );
  console.log(`${USERS} users, each user's session every ${REFRESH_MS / 1000} s for ${MINUTES} intervals (${bench.database})`);
  console.log("interval   sessions   p50 ms   p99 ms   users from memory   from the database   read ahead");
  const start = performance.now();
  let before = await reads();
  for (let m = 0; m < MINUTES; m++) {
    const latencies: number[] = [];
    const calls: Promise<void>[] = [];
    for (let i = 0; i < users.length; i++) {
      const at = start + m * REFRESH_MS + (i * REFRESH_MS) / users.length;
      const wait = at - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      calls.push(
        (async () => {
          const t = performance.now();
          const res = await bench.api.get(`/users/${users[i]}/session`);
          if (res.status !== 200) throw new Error(`session ${users[i]}: ${res.status}`);
          latencies.push(performance.now() - t);
        })(),
      );
    }
    await Promise.all(calls);
    latencies.sort((a, b) => a - b);
    const after = await reads();
    const was = before;
    const d = (k: string) => String((after[k] ?? 0) - (was[k] ?? 0));
    before = after;
    console.log(
      `${String(m + 1).padStart(8)}${String(latencies.length).padStart(11)}${pct(latencies, 50).toFixed(2).padStart(9)}${pct(latencies, 99).toFixed(2).padStart(9)}` +
        `${d("memory").padStart(20)}${d("database").padStart(20)}${d("ahead").padStart(13)}`,
    );
  }
} finally {
  await bench.close();
}
