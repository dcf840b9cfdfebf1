// Fair use between products (INGESTION_PRODUCT_SHARE, gateway/plugins/admission.ts) on `npm
// start` as its own process: a product alone is never held back; with a neighbour being
// served, a product over its share of recent service time waits, and the neighbour is served
// meanwhile. The share is set tiny so that one batch puts a product over it, whatever the speed.
import { randomBytes, randomUUID } from "node:crypto";
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

test.run();
