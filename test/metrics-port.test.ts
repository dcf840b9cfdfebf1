// METRICS_PORT: a gateway and a service process serve /metrics there alone, and not on the
// public or gRPC port (what Kubernetes exposes and what the scrape policy admits differ). And
// HOST: by default every address, IPv6 and IPv4 (a pod of an IPv6 or dual-stack cluster); a
// HOST given is the only one.
import { test } from "uvu";
import * as assert from "uvu/assert";
import { testMongoUrl } from "./support/database.ts";
import { eventually } from "./support/eventually.ts";
import { freePort, spawnEntry, type Spawned } from "./support/processes.ts";

const get = async (url: string) => {
  const res = await fetch(url);
  return { status: res.status, body: await res.text() };
};

async function check(entry: string, env: Record<string, string>, readyPath: string, series: RegExp): Promise<void> {
  const port = await freePort();
  const metricsPort = await freePort();
  const proc: Spawned = spawnEntry(entry, { ...env, PORT: String(port), METRICS_PORT: String(metricsPort) });
  try {
    await eventually(async () => (await get(`http://127.0.0.1:${port}${readyPath}`)).status === 200, 60_000, `${entry} serving`).catch((err) => {
      throw new Error(`${err.message}; output: ${proc.output()}`);
    });
    const apart = await eventually(async () => {
      const r = await get(`http://127.0.0.1:${metricsPort}/metrics`);
      return r.status === 200 ? r : undefined;
    }, 30_000, "metrics on METRICS_PORT");
    assert.match(apart.body, series);
    assert.is((await get(`http://127.0.0.1:${port}/metrics`)).status, 404, `${entry}: no /metrics on the main port`);
    assert.is((await get(`http://127.0.0.1:${metricsPort}${readyPath}`)).status, 404, `${entry}: only /metrics on the metrics port`);
    const v6 = env.HOST === undefined;
    const overIpv6 = await get(`http://[::1]:${port}${readyPath}`).then(
      (r) => r.status,
      (err: Error & { cause?: { code?: string } }) => err.cause?.code,
    );
    assert.is(overIpv6, v6 ? 200 : "ECONNREFUSED", `${entry} over IPv6 with ${v6 ? "the default HOST" : `HOST ${env.HOST}`}`);
  } finally {
    await proc.stop();
  }
}

test("the gateway process: /metrics on METRICS_PORT only, and every address by default", async () => {
  await check("gateway/main.ts", {}, "/readyz", /meter_http_requests_total/);
});

test("a service process: /metrics on METRICS_PORT only, and only the HOST given", async () => {
  await check("services/tenancy/main.ts", { HOST: "127.0.0.1", MONGODB_URL: await testMongoUrl(), MONGODB_DB: `metrics_port_${Date.now()}` }, "/healthz", /meter_rpc_requests_total|process_cpu/);
});

test.run();
