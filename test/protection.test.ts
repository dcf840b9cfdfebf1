import { test } from "uvu";
import * as assert from "uvu/assert";
import { Api } from "./support/http.ts";
import { startTestStack, type TestStack } from "./support/stack.ts";

let stack: TestStack;

test.before(async () => {
  stack = await startTestStack({
    protection: { rateLimit: { windowMs: 60_000, publicMax: 3, keyMax: 5, authFailureMax: 10, productCreateMax: 2 }, negativeCacheTtlMs: 60_000, trustProxy: false },
  });
});
test.after(async () => {
  await stack?.close();
});

/** The value of one series of the gateway process's /metrics (0 when absent). */
async function series(line: string): Promise<number> {
  const text = await (await fetch(`${stack.rpcUrl}/metrics`)).text();
  const found = text.split("\n").find((l) => l.startsWith(line + " "));
  return found ? Number(found.slice(line.length + 1)) : 0;
}

function assertRateLimited(res: { status: number; body: any; headers: Headers }) {
  assert.is(res.status, 429);
  assert.type(res.body.detail, "string");
  assert.equal(Object.keys(res.body), ["detail"]);
  const retryAfter = Number(res.headers.get("retry-after"));
  assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${res.headers.get("retry-after")}`);
}

test("unauthenticated routes are limited per client address, authenticated ones per key", async () => {
  // Two products per window from this address (a budget of their own), and three other
  // public requests.
  const a = await stack.newProduct("Limited A");
  const b = await stack.newProduct("Limited B");
  assertRateLimited(await stack.api.post("/products", { name: "One too many" }));
  for (let i = 0; i < 3; i++) assert.is((await stack.api.get("/health")).status, 200);
  assertRateLimited(await stack.api.get("/health"));

  // Keys have their own budget (5), independent of the address's and of each other's.
  for (let i = 0; i < 5; i++) assert.is((await a.api.get("/config/plans")).status, 200);
  assertRateLimited(await a.api.get("/config/plans"));
  assert.is((await b.api.get("/config/plans")).status, 200);

  // Probes and scrapes are never limited (the scrape is on the internal port).
  const base = new Api(new URL("/", stack.apiUrl).href.replace(/\/$/, ""));
  for (let i = 0; i < 5; i++) {
    assert.is((await base.get("/readyz")).status, 200);
    assert.is((await fetch(`${stack.rpcUrl}/metrics`)).status, 200);
  }
  assert.ok((await series('meter_http_requests_total{method="GET",route="/api/v1/config/plans",status="429"}')) >= 1);
});

test("a refused key is answered from the gateway's cache, not by the tenancy service every time", async () => {
  const calls = 'meter_rpc_requests_total{service="meter.tenancy.v1.TenancyService",method="Authenticate",code="unauthenticated"}';
  const before = await series(calls);
  const bad = stack.api.withKey(`mk_${"A".repeat(43)}`);
  for (let i = 0; i < 6; i++) {
    const res = await bad.get("/config/plans");
    assert.is(res.status, 401);
    assert.is(res.body.detail, "invalid API key");
  }
  assert.is((await series(calls)) - before, 1);
});

test("an unacceptable incoming request id is replaced by a generated one", async () => {
  const base = new Api(new URL("/", stack.apiUrl).href.replace(/\/$/, ""));
  const kept = await base.get("/readyz", { headers: { "x-request-id": "client-id_1.2:3" } });
  assert.is(kept.headers.get("x-request-id"), "client-id_1.2:3");
  for (const bad of ["x".repeat(129), "has space", "quote\"d", "{json}"]) {
    const res = await base.get("/readyz", { headers: { "x-request-id": bad } });
    const id = res.headers.get("x-request-id")!;
    assert.is.not(id, bad);
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  }
});

test.run();
