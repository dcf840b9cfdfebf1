import { randomBytes } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { testMongoUrl } from "./support/database.ts";
import { Api } from "./support/http.ts";
import { freePort, freePortRange, spawnEntry, type Spawned } from "./support/processes.ts";
import { eventually } from "./support/eventually.ts";

const t = suite<{ proc: Spawned; api: Api; rpcBase: number }>("split mode: one process per service, gRPC between them");

t.before(async (ctx) => {
  const port = await freePort();
  const base = await freePortRange(6); // five services, then the gateway's metrics
  ctx.rpcBase = base;
  ctx.proc = spawnEntry("cmd/split.ts", {
    PORT: String(port),
    RPC_BASE_PORT: String(base),
    MONGODB_URL: await testMongoUrl(),
    MONGODB_DB_PREFIX: `split${randomBytes(4).toString("hex")}`,
  });
  ctx.api = new Api(`http://127.0.0.1:${port}/api/v1`);
  await eventually(async () => (await ctx.api.get("/health")).body.status === "ok", 90_000, "split mode to serve").catch((err) => {
    throw new Error(`${err.message}\n${ctx.proc.output()}`);
  });
});

t.after(async (ctx) => {
  const code = await ctx.proc.stop();
  assert.is(code, 0, `split launcher exit code\n${ctx.proc.output()}`);
});

t("serves the same answers as all-in-one through separate processes", async ({ api }) => {
  assert.equal((await api.get("/health")).body, { status: "ok", database: "connected" });
  const created = await api.post("/products", { name: "Split Co" });
  assert.is(created.status, 201);
  assert.match(created.body.api_key, /^mk_/);
  const list = await api.withKey(created.body.api_key).get("/products");
  assert.is(list.status, 200);
  assert.equal(list.body.map((p: { id: string }) => p.id), [created.body.id]);
  assert.is(list.body[0].api_key, undefined);
  const denied = await api.withKey("mk_" + "B".repeat(43)).get("/products");
  assert.is(denied.status, 401);
  assert.type(denied.body.detail, "string");
});

t("each process serves its own /metrics and /healthz over HTTP/1.1 beside gRPC", async ({ api, rpcBase }) => {
  assert.is((await api.post("/products", { name: "Metered" })).status, 201);
  // The gateway's on the port after the services', never on its public port.
  assert.is((await fetch(new URL("/metrics", api.baseUrl))).status, 404);
  const gateway = await (await fetch(`http://127.0.0.1:${rpcBase + 5}/metrics`)).text();
  assert.match(gateway, /meter_http_requests_total\{method="POST",route="\/api\/v1\/products",status="201"\} [1-9]/);
  // Tenancy is the first service port: it answered CreateProduct; the plans process did not.
  const tenancy = await (await fetch(`http://127.0.0.1:${rpcBase}/metrics`)).text();
  assert.match(tenancy, /meter_rpc_requests_total\{service="meter\.tenancy\.v1\.TenancyService",method="CreateProduct",code="ok"\} [1-9]/);
  assert.match(tenancy, /process_resident_memory_bytes/);
  const plans = await (await fetch(`http://127.0.0.1:${rpcBase + 1}/metrics`)).text();
  assert.not.match(plans, /TenancyService/);
  // Each names the services it serves, with or without traffic (the alerts' MeterServiceNotScraped).
  const served = (text: string) => [...text.matchAll(/^meter_service_up\{service="(\w+)"\} 1$/gm)].map((m) => m[1]);
  assert.equal(served(gateway), ["gateway"]);
  assert.equal(served(tenancy), ["tenancy"]);
  assert.equal(served(plans), ["plans"], "served before any call reached it");
  const names = ["ingestion", "analytics", "webhooks"];
  for (let i = 2; i < 5; i++) assert.equal(served(await (await fetch(`http://127.0.0.1:${rpcBase + i}/metrics`)).text()), [names[i - 2]]);
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`http://127.0.0.1:${rpcBase + i}/healthz`);
    assert.is(res.status, 200);
    assert.equal(await res.json(), { status: "ok" });
  }
});

t.run();
