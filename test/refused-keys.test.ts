import { randomBytes } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { startTestStack, type TestStack } from "./support/stack.ts";

// The gateway runs in this process: its heap is this heap.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

let stack: TestStack;
const FAILURES = 20;
const KEY_MAX = 12;

test.before(async () => {
  stack = await startTestStack({
    protection: {
      rateLimit: { windowMs: 60_000, publicMax: 100_000, keyMax: KEY_MAX, authFailureMax: FAILURES },
      negativeCacheTtlMs: 60_000,
      // Client addresses are taken from X-Forwarded-For, so one test plays several clients.
      trustProxy: true,
    },
  });
});
test.after(async () => {
  await stack?.close();
});

async function heapAfterGc(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  return process.memoryUsage().heapUsed;
}

/** The value of one series of the gateway's /metrics (0 when absent). */
async function series(line: string): Promise<number> {
  const text = await (await fetch(`${stack.rpcUrl}/metrics`)).text();
  const found = text.split("\n").find((l) => l.startsWith(line + " "));
  return found ? Number(found.slice(line.length + 1)) : 0;
}

test("a flood of refused keys from one address is answered 429, keeps the gateway's memory flat and spares other clients", async () => {
  const { apiKey } = await stack.newProduct("Neighbour");
  const tenancyCalls = 'meter_rpc_requests_total{service="meter.tenancy.v1.TenancyService",method="Authenticate",code="unauthenticated"}';
  const callsBefore = await series(tenancyCalls);
  const before = await heapAfterGc();

  // 2,000 distinct bearer tokens of 15,000 characters (30 MB of them), and well-shaped unknown keys.
  const statuses = new Map<number, number>();
  let retryAfter: string | null = null;
  for (let round = 0; round < 40; round++) {
    const answers = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const token = round % 2 === 0 && i % 10 === 0 ? `mk_${randomBytes(32).toString("base64url")}` : randomBytes(11_250).toString("base64url");
        const res = await fetch(`${stack.apiUrl}/config/plans`, {
          headers: { authorization: `Bearer ${token}`, "x-forwarded-for": "203.0.113.7" },
        });
        await res.arrayBuffer();
        if (res.status === 429) retryAfter = res.headers.get("retry-after");
        return res.status;
      }),
    );
    for (const s of answers) statuses.set(s, (statuses.get(s) ?? 0) + 1);
  }
  assert.equal([...statuses.keys()].sort(), [401, 429], `statuses ${JSON.stringify([...statuses])}`);
  assert.ok(statuses.get(401)! <= FAILURES + 50, `${statuses.get(401)} refused before the limit`);
  assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, `Retry-After ${retryAfter}`);
  // Only well-shaped keys reach the tenancy service, and only until the address is limited.
  assert.ok((await series(tenancyCalls)) - callsBefore <= FAILURES + 50);

  const grown = (await heapAfterGc()) - before;
  assert.ok(grown < 8 * 1024 * 1024, `heap grew by ${(grown / 1048576).toFixed(1)} MB`);

  // Another client address is not affected, with a key or without one.
  const other = await fetch(`${stack.apiUrl}/config/plans`, { headers: { authorization: `Bearer ${apiKey}`, "x-forwarded-for": "198.51.100.1" } });
  assert.is(other.status, 200);
  const wrong = await fetch(`${stack.apiUrl}/config/plans`, { headers: { authorization: "Bearer nope", "x-forwarded-for": "198.51.100.2" } });
  assert.is(wrong.status, 401);
  assert.is((await wrong.json()).detail, "invalid API key");
});

test("long tokens from many addresses (none past its limit) are refused without being kept: memory stays flat", async () => {
  const before = await heapAfterGc();
  let n = 0;
  for (let round = 0; round < 40; round++) {
    const statuses = await Promise.all(
      Array.from({ length: 50 }, async () => {
        const i = n++;
        // Well-formed characters, so only the length tells them from a key.
        const res = await fetch(`${stack.apiUrl}/config/plans`, {
          headers: { authorization: `Bearer mk_${randomBytes(11_250).toString("base64url")}`, "x-forwarded-for": `10.1.${i >> 8}.${i & 255}` },
        });
        await res.arrayBuffer();
        return res.status;
      }),
    );
    assert.ok(statuses.every((s) => s === 401), `statuses ${statuses}`);
  }
  const grown = (await heapAfterGc()) - before;
  // 2,000 tokens of 15,000 characters are 30 MB: kept, they would show.
  assert.ok(grown < 8 * 1024 * 1024, `heap grew by ${(grown / 1048576).toFixed(1)} MB`);
});

test("a product's rate limit counts every request of the product, whichever of its keys sends it", async () => {
  const { api } = await stack.newProduct("Two keys");
  const created = await api.post("/keys", { name: "client", scope: "ingest" });
  assert.is(created.status, 201);
  const ingest = api.withKey(created.body.key);
  // One request spent on POST /keys; the rest alternate between the two keys.
  for (let i = 1; i < KEY_MAX; i++) assert.is((await (i % 2 ? ingest : api).get("/config/plans")).status, 200, `request ${i + 1}`);
  assert.is((await ingest.get("/config/plans")).status, 429);
  assert.is((await api.get("/config/plans")).status, 429);
});

test("a token that cannot be a key is refused without asking the tenancy service", async () => {
  const calls = 'meter_rpc_requests_total{service="meter.tenancy.v1.TenancyService",method="Authenticate",code="unauthenticated"}';
  const before = await series(calls);
  for (const token of ["mk_short", `mk_${"A".repeat(44)}`, `sk_${"A".repeat(43)}`, "x".repeat(5000)]) {
    const res = await fetch(`${stack.apiUrl}/config/plans`, { headers: { authorization: `Bearer ${token}`, "x-forwarded-for": "198.51.100.3" } });
    assert.is(res.status, 401, token.slice(0, 10));
  }
  const unknown = await fetch(`${stack.apiUrl}/config/plans`, {
    headers: { authorization: `Bearer mk_${"B".repeat(43)}`, "x-forwarded-for": "198.51.100.3" },
  });
  assert.is(unknown.status, 401);
  // One call: the well-shaped unknown key; the malformed ones never left the gateway.
  assert.is((await series(calls)) - before, 1);
});

test.run();
