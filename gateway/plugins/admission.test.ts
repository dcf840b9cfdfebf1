// Fair use between products (INGESTION_PRODUCT_SHARE, gateway/plugins/admission.ts) on `npm
// start` as its own process: a product alone is never held back; with a neighbour being
// served, a product over its share of recent service time waits, and the neighbour is served
// meanwhile. The share is set tiny so that one batch puts a product over it, whatever the speed.
import { randomBytes, randomUUID } from "node:crypto";
import http from "node:http";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { testMongoUrl } from "../../test/support/database.ts";
import { eventually } from "../../test/support/eventually.ts";
import type { Api } from "../../test/support/http.ts";
import { startAllInOne } from "../../test/support/processes.ts";

const batch = (n: number) =>
  Array.from({ length: n }, () => ({ id: randomUUID(), user_id: "u1", timestamp: new Date().toISOString(), model: "gpt-4.1", input_tokens: 10, output_tokens: 1, cost_total: 0.001 }));

async function metric(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? NaN);
}

test("a product over its share of recent time waits while another product is served; alone, it never waits", async () => {
  const aio = await startAllInOne({
    MONGODB_URL: await testMongoUrl(),
    MONGODB_DB_PREFIX: `fair${randomBytes(4).toString("hex")}`,
    INGESTION_PRODUCT_SHARE: "0.000001",
    INGESTION_SHARE_WINDOW_MS: "2000",
  });
  try {
    const key = async (name: string) => (await aio.api.post("/products", { name })).body.api_key as string;
    const a = aio.api.withKey(await key("Busy"));
    const b = aio.api.withKey(await key("Quiet"));

    // Alone: A is far over its share after one batch, and its next ones pass all the same.
    for (let i = 0; i < 3; i++) assert.is((await a.post("/events/batch", batch(20))).status, 200);
    assert.is(await metric(aio.rpcBase, "meter_ingestion_share_waits_total"), 0);

    // B is served without pause from now on: A's next batch waits.
    let reading = true;
    const reads: number[] = [];
    const readLoop = (async () => {
      while (reading) reads.push((await b.get("/config/plans")).status);
    })();
    const served = (api: Api) => api.get("/config/plans").then((r) => r.status);
    await eventually(() => reads.length > 0, 30_000, "B's first read");
    let answered = false;
    const held = a.post("/events/batch", batch(20)).then((r) => ((answered = true), r));
    await eventually(async () => (await metric(aio.rpcBase, "meter_ingestion_share_waiting")) === 1, 30_000, "A's batch held back");
    // While it waits, B is served.
    const before = reads.length;
    await eventually(() => reads.length > before + 3, 30_000, "B's reads while A waits");
    assert.is(await served(b), 200);
    assert.ok(reads.every((s) => s === 200), `B's reads: ${[...new Set(reads)]}`);
    assert.not.ok(answered, "A's batch is still waiting while B is being served");

    // B goes quiet: A's batch is admitted and stored.
    reading = false;
    await readLoop;
    assert.is((await held).status, 200);
    assert.is((await held).body.accepted, 20);
    assert.is(await metric(aio.rpcBase, "meter_ingestion_share_waiting"), 0);
    assert.is(await metric(aio.rpcBase, "meter_ingestion_share_waits_total"), 1);
  } finally {
    assert.is(await aio.proc.stop(), 0, aio.proc.output());
  }
});

test("batches of every product together hold at most GATEWAY_BATCH_BYTES_IN_FLIGHT: beyond, 429 with Retry-After; nothing is lost", async () => {
  const aio = await startAllInOne({
    MONGODB_URL: await testMongoUrl(),
    MONGODB_DB_PREFIX: `bytes${randomBytes(4).toString("hex")}`,
    GATEWAY_BATCH_BYTES_IN_FLIGHT: "3000",
  });
  try {
    const key = async (name: string) => (await aio.api.post("/products", { name })).body.api_key as string;
    const [keyA, keyB] = [await key("Slow sender"), await key("Neighbour")];
    const b = aio.api.withKey(keyB);
    for (const k of [keyA, keyB]) assert.is((await aio.api.withKey(k).post("/users", { external_user_id: "u1" })).status, 201);
    // A's batch (about 2,000 bytes) is admitted once its headers are in; its body comes slowly.
    const body = JSON.stringify(batch(10));
    assert.ok(body.length > 1_500 && body.length < 3_000, `${body.length} bytes`);
    const url = new URL(`${aio.base}/api/v1/events/batch`);
    let answerA!: (status: number) => void;
    const statusA = new Promise<number>((r) => (answerA = r));
    const slow = http.request(url, { method: "POST", headers: { authorization: `Bearer ${keyA}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
      res.resume();
      answerA(res.statusCode!);
    });
    slow.write(body.slice(0, 100));
    await eventually(async () => (await metric(aio.rpcBase, "meter_http_batch_bytes_in_flight")) > 1_500, 30_000, "A's batch admitted");
    // B's batch would pass the bound: refused at once, told when to come back.
    const refused = await b.post("/events/batch", batch(10));
    assert.is(refused.status, 429, JSON.stringify(refused.body));
    assert.ok(Number(refused.headers.get("retry-after")) >= 1);
    assert.match(refused.body.detail, /bytes of batches/);
    // A's body arrives: stored; B's retry then passes. Every event once.
    slow.end(body.slice(100));
    assert.is(await statusA, 200);
    assert.is(await metric(aio.rpcBase, "meter_http_batch_bytes_in_flight"), 0);
    const retried = await b.post("/events/batch", batch(10));
    assert.equal([retried.status, retried.body.accepted], [200, 10]);
    const a = aio.api.withKey(keyA);
    assert.is((await a.get("/users/u1/usage")).body.total_tokens, 110);
    assert.is((await b.get("/users/u1/usage")).body.total_tokens, 110);
  } finally {
    assert.is(await aio.proc.stop(), 0, aio.proc.output());
  }
});

test.run();
