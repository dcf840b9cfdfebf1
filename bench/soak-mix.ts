// `SOAK_MODE=mix npm run bench:soak`: a sustained mix against `npm start` (its own process,
// embedded database in a temporary directory) for SOAK_MIX_MINUTES (10): ingestion (2 clients,
// batches of 100 usage events, ~400 events/s), sessions (2 clients), usage reads (1 client),
// analytics (1 client, a summary, a timeseries and top users every 500 ms) and webhook
// deliveries (a gate event of its own reason every 200 ms, delivered to a local receiver).
// Prints, every minute, the process's live heap (heap used right after a full collection,
// asked through the inspector: the process runs with --inspect on a local port), its heap used,
// external memory and RSS as `/metrics` reports them, the database's size on disk and p50/p99 per route over
// that minute; at the end, p50/p99 per route per minute and for the whole run, and the live
// heap at start, middle and end. Flat latency and a flat live heap are the target.
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { Receiver } from "../services/webhooks/testing/receiver.ts";
import { chaosProduct } from "../test/support/chaos.ts";
import { freePort, startAllInOne } from "../test/support/processes.ts";
import { CHAOS_ENV, withScene } from "./support/chaos.ts";
import { HeapInspector } from "./support/inspector.ts";

const MINUTES = Number(process.env.SOAK_MIX_MINUTES ?? 10);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

const MB = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;

/** Heap used, external memory (buffers) and RSS as the process's `/metrics` reports them (garbage not yet collected included). */
async function metricsHeap(base: string): Promise<string> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const num = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(text)?.[1] ?? NaN);
  return `heap used ${MB(num("nodejs_heap_size_used_bytes"))}, external ${MB(num("nodejs_external_memory_bytes"))}, rss ${MB(num("process_resident_memory_bytes"))}`;
}
const diskOf = (dir: string) => `${(Number(execFileSync("du", ["-sb", dir]).toString().split("\t")[0]) / 2 ** 20).toFixed(1)} MB`;

export default async function soakMix(): Promise<void> {
  await withScene(async (dir, rx: Receiver) => {
    const inspectPort = await freePort();
    const aio = await startAllInOne({
      MONGODB_URL: undefined,
      DATA_DIR: dir,
      ...CHAOS_ENV,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --inspect=127.0.0.1:${inspectPort}`.trim(),
    });
    let inspector: HeapInspector | undefined;
    try {
      inspector = await HeapInspector.connect(inspectPort);
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
      const fmt = (xs: number[]) => (xs.length ? `${pct(xs, 50).toFixed(0)} / ${pct(xs, 99).toFixed(0)}` : "-");
      let gates = 0;
      // Live heap (after a full collection) by minute, 0 being the start.
      const heapAfterGc = inspector.heapAfterGc.bind(inspector);
      const live: number[] = [await heapAfterGc()];
      console.log(`start: live heap ${MB(live[0]!)} after GC (${await metricsHeap(aio.rpcBase)}); database ${diskOf(dir)}`);
      // The collection pauses the process for a moment once a minute; the samples keep it.
      let sampling = Promise.resolve();
      const minute = setInterval(() => {
        sampling = sampling.then(async () => {
          const m = Math.round((Date.now() - started) / 60_000);
          const raw = await metricsHeap(aio.rpcBase);
          live[m] = await heapAfterGc();
          const last = samples.filter((s) => s.at > Date.now() - started - 60_000);
          const byRoute = [...new Set(last.map((s) => s.route))].map((r) => `${r} ${fmt(last.filter((s) => s.route === r).map((s) => s.ms))}`);
          console.log(`  ${m} min: live heap ${MB(live[m]!)} after GC (${raw}); database ${diskOf(dir)}; ${last.length} requests; p50 / p99 ms: ${byRoute.join(", ")}`);
        }).catch((err) => console.log(`  sampling failed: ${err}`));
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
      await sampling;
      const raw = await metricsHeap(aio.rpcBase);
      const end = await heapAfterGc();
      console.log(`end:   live heap ${MB(end)} after GC (${raw}); database ${diskOf(dir)}`);
      const mid = live[Math.floor(MINUTES / 2)];
      console.log(`live heap after GC: start ${MB(live[0]!)}, middle ${mid === undefined ? "-" : MB(mid)}, end ${MB(end)}`);
      const routes = [...new Set(samples.map((s) => s.route))];
      const minutes = Array.from({ length: Math.ceil(MINUTES) }, (_, i) => i);
      console.log(`p50 / p99 ms per minute of the run:`);
      console.log(`${"route".padEnd(24)} ${"requests".padStart(8)} ${"non-2xx".padStart(7)} ${minutes.map((m) => `min ${m + 1}`.padStart(11)).join("")}  ${"whole run".padStart(11)}`);
      for (const r of routes) {
        const all = samples.filter((s) => s.route === r);
        const bad = all.filter((s) => s.status < 200 || s.status >= 300).length;
        const per = minutes.map((m) => fmt(all.filter((s) => s.at >= m * 60_000 && s.at < (m + 1) * 60_000).map((s) => s.ms)).padStart(11));
        console.log(`${r.padEnd(24)} ${String(all.length).padStart(8)} ${String(bad).padStart(7)} ${per.join("")}  ${fmt(all.map((s) => s.ms)).padStart(11)}`);
      }
      const delivered = rx.received.filter((r) => r.json?.product_id === p.productId && r.json.type === "gate_event.soft_gate").length;
      console.log(`webhook deliveries received: ${delivered} of ${gates} gate events`);
    } finally {
      inspector?.close();
      await aio.proc.stop();
    }
  });
}
