// A newcomer's first run, against the real all-in-one process: the README's quickstart, pasted
// into bash as written, prints the usage it promises; then the process's internal port serves the
// series the operations dashboard reads, after that real traffic.
import { execFile } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Receiver } from "../services/webhooks/testing/receiver.ts";
import { testMongoUrl } from "./support/database.ts";
import { eventually } from "./support/eventually.ts";
import { repoRoot, startAllInOne, type AllInOne } from "./support/processes.ts";

const exec = promisify(execFile);
const t = suite<AllInOne>("first run");

t.before(async (ctx) => {
  Object.assign(
    ctx,
    await startAllInOne({
      MONGODB_URL: await testMongoUrl(),
      MONGODB_DB_PREFIX: `q${randomBytes(4).toString("hex")}`,
      WEBHOOKS_ALLOW_INSECURE_URLS: "true",
      RELAY_INTERVAL_MS: "100",
    }),
  );
});
t.after(async (ctx) => {
  assert.is(await ctx.proc?.stop(), 0, ctx.proc?.output());
});

t("the README's quickstart runs as pasted and prints the usage it promises", async ({ api }) => {
  const readme = await readFile(path.join(repoRoot, "README.md"), "utf8");
  const block = /<!-- quickstart[^>]*-->\s*```bash\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(block, "README.md has a quickstart block");
  const { stdout } = await exec("bash", ["-e", "-o", "pipefail", "-c", block], {
    env: { ...process.env, API: api.baseUrl },
    timeout: 60_000,
  });
  const lines = stdout.trim().split("\n");
  assert.equal(JSON.parse(lines[0]!), { accepted: 1, duplicates: 0 });
  const usage = JSON.parse(lines.at(-1)!);
  assert.is(usage.user_id, "alice");
  assert.is(usage.total_cost, 0.0048);
  assert.is(usage.total_tokens, 1500);
  assert.equal(usage.tokens_by_model, { "gpt-4.1": 1500 });
});

/** Every sample of the scrape as "name{labels}" -> value. */
async function scrape(url: string): Promise<Map<string, number>> {
  const res = await fetch(`${url}/metrics`);
  assert.is(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
  const samples = new Map<string, number>();
  for (const line of (await res.text()).split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

t("/metrics shows HTTP, RPC, ingestion, outbox, webhook and job series after real traffic", async ({ api, base, rpcBase }) => {
  // A delivered threshold webhook, so that delivery and job series have something to count.
  const rx = await new Receiver().start();
  try {
    const product = await api.post("/products", { name: "Metrics" });
    const key = api.withKey(product.body.api_key);
    const plan = await key.post("/config/plans", { plans: [{ name: "tiny", max_spend_per_period: 1 }] });
    assert.is((await key.post("/users", { external_user_id: "bob" })).status, 201);
    const sub = await key.post("/users/bob/subscription", {
      plan_id: plan.body.plans[0].id,
      period_start: new Date(Date.now() - 86_400_000).toISOString(),
      period_end: new Date(Date.now() + 86_400_000).toISOString(),
    });
    assert.is(sub.status, 200);
    const ep = await key.post("/webhooks/endpoints", { url: rx.url, subscribed_events: ["usage.threshold.50"] });
    assert.is(ep.status, 201, JSON.stringify(ep.body));
    const event = { id: randomUUID(), user_id: "bob", timestamp: new Date().toISOString(), model: "m", cost_total: 0.6 };
    assert.equal((await key.post("/events/batch", [event])).body, { accepted: 1, duplicates: 0 });
    assert.equal((await key.post("/events/batch", [event])).body, { accepted: 0, duplicates: 1 });
    await eventually(() => rx.of("usage.threshold.50").length > 0, 60_000, "the threshold webhook");

    const delivered = 'meter_webhook_deliveries_total{outcome="success",attempt="1"}';
    const m = await eventually(async () => {
      const s = await scrape(rpcBase);
      return (s.get(delivered) ?? 0) >= 1 ? s : undefined;
    }, 30_000, "the delivery to be counted");
    const expect = (series: string, min = 1) => assert.ok((m.get(series) ?? -1) >= min, `${series} = ${m.get(series)}`);
    expect('meter_http_requests_total{method="POST",route="/api/v1/events/batch",status="200"}', 2);
    expect('meter_http_request_duration_seconds_count{method="POST",route="/api/v1/events/batch",status="200"}', 2);
    expect('meter_rpc_requests_total{service="meter.ingestion.v1.IngestionService",method="IngestUsageEvents",code="ok"}', 2);
    expect('meter_rpc_request_duration_seconds_bucket{le="+Inf",service="meter.tenancy.v1.TenancyService",method="Authenticate",code="ok"}');
    expect('meter_ingestion_events_total{kind="usage",result="accepted"}', 2);
    expect('meter_ingestion_events_total{kind="usage",result="duplicate"}', 1);
    expect('meter_outbox_depth{name="ingestion_to_webhooks"}', 0);
    expect('meter_outbox_oldest_age_seconds{name="ingestion_to_analytics"}', 0);
    expect('meter_job_lag_seconds{name="webhooks"}', 0);
    expect("process_cpu_user_seconds_total", 0);
    // Counters alerted on with increase() exist at 0 before their first event: one born at 1 shows no increase.
    for (const series of [
      'meter_ingestion_jobs_quarantined_total{kind="usage"}',
      'meter_ingestion_jobs_quarantined_total{kind="gate"}',
      'meter_ingestion_busy_refusals_total{kind="usage"}',
      'meter_backlog_read_failures_total{name="ingestion_to_webhooks"}',
      'meter_webhook_deliveries_total{outcome="failed",attempt="6"}',
    ]) assert.is(m.get(series), 0, series);
    expect("nodejs_heap_size_used_bytes");

    // Only the internal port (beside gRPC) serves them: the public one shows no platform volume.
    assert.is((await fetch(`${base}/metrics`)).status, 404);
  } finally {
    await rx.stop();
  }
});

t.run();
