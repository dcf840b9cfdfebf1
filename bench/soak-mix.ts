// `SOAK_MODE=mix npm run bench:soak`: a sustained mix against `npm start` (its own process,
// embedded database in a temporary directory) for SOAK_MIX_MINUTES (10): ingestion (2 clients,
// batches of 100 usage events, ~400 events/s), sessions (2 clients), usage reads (1 client),
// analytics (1 client, a summary, a timeseries and top users every 500 ms) and webhook
// deliveries (a gate event of its own reason every 200 ms, delivered to a local receiver).
// Prints p50/p99 per route for the first and the last minute and the whole run, and the
// process's heap and the database's size on disk at start and end: flat latency and memory
// are the target.
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { Receiver } from "../services/webhooks/testing/receiver.ts";
import { chaosProduct } from "../test/support/chaos.ts";
import { startAllInOne } from "../test/support/processes.ts";
import { CHAOS_ENV, withScene } from "./support/chaos.ts";

const MINUTES = Number(process.env.SOAK_MIX_MINUTES ?? 10);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

async function heapOf(base: string): Promise<string> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const num = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(text)?.[1] ?? NaN) / 2 ** 20;
  return `heap used ${num("nodejs_heap_size_used_bytes").toFixed(0)} MB, rss ${num("process_resident_memory_bytes").toFixed(0)} MB`;
}
const diskOf = (dir: string) => `${(Number(execFileSync("du", ["-sb", dir]).toString().split("\t")[0]) / 2 ** 20).toFixed(1)} MB`;

export default async function soakMix(): Promise<void> {
  await withScene(async (dir, rx: Receiver) => {
    const aio = await startAllInOne({ MONGODB_URL: undefined, DATA_DIR: dir, ...CHAOS_ENV });
    try {
      const p = await chaosProduct(aio.api, rx, 50);
      const started = Date.now();
      const until = started + MINUTES * 60_000;
      const samples: { route: string; at: number; ms: number; status: number }[] = [];
      const timed = async (route: string, call: () => Promise<{ status: number }>) => {
        const t = performance.now();
        const res = await call().catch(() => ({ status: 0 }));
        samples.push({ route, at: Date.now() - started, ms: performance.now() - t, status: res.status });
      };
      const pace = (ms: number) => new Promise((r) => setTimeout(r, ms));
      const user = () => p.users[Math.floor(Math.random() * p.users.length)]!;
      const loop = async (fn: () => Promise<void>, pauseMs = 0) => {
        while (Date.now() < until) {
          await fn();
          if (pauseMs) await pace(pauseMs);
        }
      };
      const event = () => ({ id: randomUUID(), user_id: user(), timestamp: new Date().toISOString(), model: "gpt-4.1", input_tokens: 100, output_tokens: 10, cost_total: 0.0001 });
      let gates = 0;
      console.log(`start: ${await heapOf(aio.base)}; database ${diskOf(dir)}`);
      const minute = setInterval(() => {
        const last = samples.filter((s) => s.at > Date.now() - started - 60_000);
        console.log(`  ${Math.round((Date.now() - started) / 60_000)} min: ${last.length} requests in the last minute, sessions p99 ${pct(last.filter((s) => s.route === "session").map((s) => s.ms), 99).toFixed(1)} ms`);
      }, 60_000);
      await Promise.all([
        loop(() => timed("POST /events/batch", () => p.api.post("/events/batch", Array.from({ length: 100 }, event))), 450),
        loop(() => timed("POST /events/batch", () => p.api.post("/events/batch", Array.from({ length: 100 }, event))), 450),
        loop(() => timed("session", () => p.api.get(`/users/${user()}/session`))),
        loop(() => timed("session", () => p.api.get(`/users/${user()}/session`))),
        loop(() => timed("usage", () => p.api.get(`/users/${user()}/usage`))),
        loop(async () => {
          await timed("analytics/summary", () => p.api.get("/analytics/summary?days=7"));
          await timed("analytics/timeseries", () => p.api.get("/analytics/timeseries?days=7"));
          await timed("analytics/top-users", () => p.api.get("/analytics/top-users?days=7"));
        }, 500),
        loop(async () => {
          const g = { id: randomUUID(), user_id: user(), timestamp: new Date().toISOString(), status: "soft_gate", gate_reason: `model_limit:m${gates++}`, model: "m", usage_pct: 80, current_value: 8, limit_value: 10 };
          await timed("POST /gate-events/batch", () => p.api.post("/gate-events/batch", [g]));
        }, 200),
      ]);
      clearInterval(minute);
      console.log(`end:   ${await heapOf(aio.base)}; database ${diskOf(dir)}`);
      // The heap above holds garbage not yet collected; V8 collects when the process idles.
      await pace(15_000);
      console.log(`after 15 s idle: ${await heapOf(aio.base)}`);
      const routes = [...new Set(samples.map((s) => s.route))];
      const fmt = (xs: number[]) => (xs.length ? `${pct(xs, 50).toFixed(1)} / ${pct(xs, 99).toFixed(1)}` : "-");
      const endAt = MINUTES * 60_000;
      console.log(`route                       requests  non-2xx   p50 / p99 ms first minute   last minute   whole run`);
      for (const r of routes) {
        const all = samples.filter((s) => s.route === r);
        const first = all.filter((s) => s.at < 60_000).map((s) => s.ms);
        const last = all.filter((s) => s.at >= endAt - 60_000).map((s) => s.ms);
        const bad = all.filter((s) => s.status < 200 || s.status >= 300).length;
        console.log(`${r.padEnd(27)} ${String(all.length).padStart(8)} ${String(bad).padStart(8)}   ${fmt(first).padStart(24)} ${fmt(last).padStart(13)} ${fmt(all.map((s) => s.ms)).padStart(11)}`);
      }
      const delivered = rx.received.filter((r) => r.json?.product_id === p.productId && r.json.type === "gate_event.soft_gate").length;
      console.log(`webhook deliveries received: ${delivered} of ${gates} gate events`);
    } finally {
      await aio.proc.stop();
    }
  });
}
