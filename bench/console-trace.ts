// A Chromium performance trace of the console's screens in a fresh document (the browser cache
// warm), summarised as a timeline on the page's clock: the HTML's and assets' requests, parsing,
// script compile and evaluation, style and layout (forced ones with their caller), the API
// calls and the moment the data is in the DOM. A small product (a few users, plans, a webhook
// endpoint) on the embedded database, served by an all-in-one process.
// BENCH_TRACE_MEASURED untraced loads of each screen first print p50/p95 of the data on screen
// and of the first call's start.
//   BENCH_TRACE_SCREENS=keys,overview BENCH_TRACE_OUT=/tmp/console-trace npm run bench:console:trace
//   BENCH_TRACE_LOADS=0 BENCH_TRACE_MEASURED=15 BENCH_TRACE_SCREENS=overview,users,plans,webhooks,keys npm run bench:console:trace
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { buildConsoleIfStale } from "../console/scripts/build.ts";
import { benchAllInOne } from "./support/database.ts";
import { seedEvent } from "./support/seed-events.ts";
import { pct } from "./support/stats.ts";
import { consolePage, type Shown } from "./support/console-page.ts";

const SCREENS = (process.env.BENCH_TRACE_SCREENS ?? "keys,overview").split(",");
const OUT = process.env.BENCH_TRACE_OUT ?? "";
const LOADS = Number(process.env.BENCH_TRACE_LOADS ?? 3);
/** Untraced loads of each screen before the traced ones, summarised as p50/p95. */
const MEASURED = Number(process.env.BENCH_TRACE_MEASURED ?? 0);
/** Also a sampled CPU profile of each traced load: the functions with the most self time. */
const PROFILE = process.env.BENCH_TRACE_PROFILE === "1";

const READY: Record<string, { url: string; shown: Shown }> = {
  overview: { url: "/console/", shown: [{ css: "table", text: "Users with the highest cost" }, { css: ".cards .stat" }] },
  users: { url: "/console/users", shown: [{ css: "table tbody a" }] },
  user: { url: "/console/users/user-7", shown: [{ css: '[role="meter"]' }, { css: "table", text: "Gate events, newest first" }, { css: 'section[aria-label="Usage by model"]', text: "Tool calls" }, { css: 'section[aria-label="Credits"]' }] },
  plans: { url: "/console/plans", shown: [{ css: "table tbody td", text: "pro" }] },
  webhooks: { url: "/console/webhooks", shown: [{ css: "a", text: "http://127.0.0.1:9/hooks" }] },
  keys: { url: "/console/keys", shown: [{ css: "table tbody td" }] },
};

interface TraceEvent {
  name: string;
  cat: string;
  ph: string;
  ts: number;
  dur?: number;
  pid: number;
  tid: number;
  args?: { data?: Record<string, unknown>; beginData?: Record<string, unknown>; frame?: string };
}

await buildConsoleIfStale(console.log);
const { api: anon, base, stop } = await benchAllInOne("console-trace", { WEBHOOKS_ALLOW_INSECURE_URLS: "true" });
try {
  const product = await anon.post("/products", { name: "trace" });
  const key: string = product.body.api_key;
  const api = anon.withKey(key);
  const plans = (await api.post("/config/plans", { plans: [{ name: "free", max_spend_per_period: 5 }, { name: "pro", max_spend_per_period: 50 }] })).body.plans as { id: string }[];
  const now = new Date();
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
  for (let i = 0; i < 20; i++) {
    await api.post("/users", { external_user_id: `user-${i}`, name: `User ${i}` });
    await api.post(`/users/user-${i}/subscription`, { plan_id: plans[i % 2]!.id, period_start: start, period_end: end });
  }
  await api.post("/events/batch", Array.from({ length: 200 }, (_, i) => seedEvent(`user-${i % 20}`, 86_400_000)));
  await api.post("/gate-events/batch", Array.from({ length: 5 }, (_, i) => ({ id: `g${i}`, user_id: "user-7", timestamp: new Date(Date.now() - 60_000 * (i + 1)).toISOString(), status: "soft_gate", gate_reason: "total_spend", usage_pct: 0.85, current_value: 4.25, limit_value: 5, blocked: false })));
  await api.post("/webhooks/endpoints", { url: "http://127.0.0.1:9/hooks", subscribed_events: ["usage.threshold.100"] });

  const { browser, context, page } = await consolePage(key);
  const shown = (s: { shown: Shown }) =>
    Promise.race([
      page.evaluate((sel) => (window as unknown as { __shown(x: unknown): Promise<number> }).__shown(sel), s.shown),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not shown within 30 s: ${JSON.stringify(s.shown)} on ${page.url()}`)), 30_000).unref()),
    ]);
  if (OUT) await mkdir(OUT, { recursive: true });
  for (const screen of SCREENS) {
    const ready = READY[screen]!;
    await page.goto(base + ready.url); // fills the cache
    await shown(ready);
    // Untraced loads first: the data on screen and the first call's start, on the page's clock.
    const at: number[] = [];
    const calls: number[] = [];
    for (let i = 0; i < MEASURED; i++) {
      await page.goto("about:blank");
      await page.goto(base + ready.url, { waitUntil: "commit" });
      at.push(await shown(ready));
      calls.push(await page.evaluate(() => Math.min(...performance.getEntriesByType("resource").filter((e) => e.name.includes("/api/v1/")).map((e) => e.startTime))));
    }
    if (MEASURED) {
      const q = (xs: number[]) => `p50 ${pct([...xs].sort((a, b) => a - b), 50).toFixed(0)} p95 ${pct([...xs].sort((a, b) => a - b), 95).toFixed(0)}`;
      console.log(`${screen.padEnd(10)} ${MEASURED} fresh documents: data in the DOM ${q(at)} ms; first call left ${q(calls)} ms`);
    }
    for (let load = 0; load < LOADS; load++) {
      await page.goto("about:blank");
      const cdp = PROFILE ? await context.newCDPSession(page) : null;
      if (cdp) {
        await cdp.send("Profiler.enable");
        await cdp.send("Profiler.setSamplingInterval", { interval: 100 });
        await cdp.send("Profiler.start");
      }
      await browser.startTracing(page, { categories: ["devtools.timeline", "disabled-by-default-devtools.timeline", "blink.user_timing", "loading", "v8.execute", "blink", "disabled-by-default-devtools.timeline.stack"] });
      await page.goto(base + ready.url, { waitUntil: "commit" });
      const shownAt = await shown(ready);
      const buf = await browser.stopTracing();
      if (OUT) await writeFile(path.join(OUT, `${screen}-${load}.json`), buf);
      summarise(screen, load, JSON.parse(buf.toString()).traceEvents as TraceEvent[], shownAt);
      if (cdp) {
        const profile = (await cdp.send("Profiler.stop")).profile as unknown as CpuProfile;
        if (OUT) await writeFile(path.join(OUT, `${screen}-${load}.cpuprofile`), JSON.stringify(profile));
        profileSummary(profile);
      }
    }
  }
  await browser.close();
} finally {
  await stop();
}

/** The renderer main thread's events from navigation start, in ms on the page's clock. */
function summarise(screen: string, load: number, events: TraceEvent[], shownAt: number) {
  // The navigation's start: the main frame's last navigationStart before the document's request.
  const docRequest = events.find((e) => e.name === "ResourceSendRequest" && String((e.args?.data as { url?: string } | undefined)?.url).includes("/console"));
  const navStart = events.filter((e) => e.name === "navigationStart" && (e.args?.data as { isOutermostMainFrame?: boolean } | undefined)?.isOutermostMainFrame && (!docRequest || e.ts <= docRequest.ts)).sort((a, b) => b.ts - a.ts)[0];
  if (!navStart) return console.log(`${screen}: no navigationStart in the trace`);
  const main = events.filter((e) => e.pid === navStart.pid && e.tid === navStart.tid);
  const t = (e: TraceEvent) => ((e.ts - navStart.ts) / 1000).toFixed(1).padStart(7);
  const d = (e: TraceEvent) => ((e.dur ?? 0) / 1000).toFixed(1).padStart(6);
  console.log(`\n${screen} load ${load}: data in the DOM at ${shownAt.toFixed(0)} ms`);
  const network = events.filter((e) => e.name === "ResourceSendRequest" || e.name === "ResourceReceiveResponse" || e.name === "ResourceFinish");
  const urls = new Map<string, string>();
  for (const e of network) {
    const data = e.args?.data as { requestId?: string; url?: string; fromCache?: boolean; fromServiceWorker?: boolean } | undefined;
    if (data?.url) urls.set(data.requestId!, data.url.replace(base, ""));
  }
  const rows: [number, string][] = [];
  for (const e of network) {
    if (e.ts < navStart.ts) continue;
    const data = e.args?.data as { requestId?: string; fromCache?: boolean } | undefined;
    if (urls.get(data!.requestId!)?.startsWith("data:")) continue;
    rows.push([e.ts, `${t(e)}        ${e.name.padEnd(24)} ${urls.get(data!.requestId!) ?? "?"}${data?.fromCache ? " (cache)" : ""}`]);
  }
  const interesting = new Set(["ParseHTML", "EvaluateScript", "v8.compileModule", "v8.evaluateModule", "v8.compile", "FunctionCall", "UpdateLayoutTree", "Layout", "Paint", "TimerFire", "FireAnimationFrame", "RunMicrotasks", "XHRReadyStateChange", "EventDispatch", "CompileScript", "ParseAuthorStyleSheet", "MarkDOMContent", "MarkLoad", "firstContentfulPaint"]);
  for (const e of main) {
    if (e.ts < navStart.ts || !interesting.has(e.name)) continue;
    if ((e.dur ?? 0) < 1000 && !["MarkDOMContent", "firstContentfulPaint", "Layout", "UpdateLayoutTree"].includes(e.name)) continue;
    if ((e.name === "Layout" || e.name === "UpdateLayoutTree") && (e.dur ?? 0) < 500) continue;
    const data = (e.args?.data ?? e.args?.beginData ?? {}) as { url?: string; functionName?: string; stackTrace?: { functionName: string; url: string; lineNumber: number }[]; type?: string };
    const stack = data.stackTrace?.length ? ` forced by ${data.stackTrace.slice(0, 3).map((f) => `${f.functionName || "?"}@${f.url.split("/").pop()}:${f.lineNumber}`).join(" < ")}` : "";
    const what = data.url ? data.url.replace(base, "") : data.functionName ?? data.type ?? "";
    rows.push([e.ts, `${t(e)} ${d(e)} ${e.name.padEnd(24)} ${what}${stack}`]);
  }
  for (const [, row] of rows.sort((a, b) => a[0] - b[0])) console.log(row);
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time by function (the console's own scripts only), the 25 largest. */
function profileSummary(p: CpuProfile) {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  for (let i = 0; i < p.samples.length; i++) {
    const f = byId.get(p.samples[i]!)!.callFrame;
    const name = `${f.functionName || "(anonymous)"} ${f.url.split("/").pop()}:${f.lineNumber + 1}:${f.columnNumber + 1}`;
    self.set(name, (self.get(name) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000);
  }
  const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, 25);
  console.log("  self ms  function");
  for (const [name, ms] of rows) console.log(`${ms.toFixed(1).padStart(9)}  ${name}`);
}
