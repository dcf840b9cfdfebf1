// Where ingestion batches wait when senders outpace the store (a trace, not a figure of merit):
// SENDERS (16) post batches of 1,000 events of one product without pause for SECONDS (12), then
// stop. Every 500 ms it prints the requests the senders have out (sent, not answered), the
// batches the ingestion service holds (arrival to stored, its per-product gate included), the
// difference (waiting in the gateway: its admission line, body unread), the database commands
// outstanding and the driver pool's waiting check-outs. BOUND=0: no bound on the events held nor
// on the wait for admission (the code before "Bounded work in flight"); BOUND=default: as configured.
//   SENDERS=40 BOUND=0 node --import tsx bench/ingest-trace.ts
import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { createLogger } from "@meter/lib/logger";
import { ingestionInFlight } from "@meter/lib/metrics";
import { startStack } from "../cmd/stack.ts";
import { Api } from "../test/support/http.ts";
import { benchDatabase } from "./support/database.ts";

const db = { out: 0, poolWait: 0, poolUsed: 0, maxOut: 0 };
const connect = MongoClient.prototype.connect;
MongoClient.prototype.connect = function (this: MongoClient) {
  (this as unknown as { monitorCommands: boolean }).monitorCommands = true;
  this.on("commandStarted", () => { db.out++; db.maxOut = Math.max(db.maxOut, db.out); });
  this.on("commandSucceeded", () => db.out--);
  this.on("commandFailed", () => db.out--);
  this.on("connectionCheckOutStarted", () => db.poolWait++);
  this.on("connectionCheckedOut", () => { db.poolWait--; db.poolUsed++; });
  this.on("connectionCheckOutFailed", () => db.poolWait--);
  this.on("connectionCheckedIn", () => db.poolUsed--);
  return connect.call(this) as never;
} as never;

const SENDERS = Number(process.env.SENDERS ?? 16), BATCH = 1000, SECONDS = Number(process.env.SECONDS ?? 12);
const bound = process.env.BOUND === "default" ? undefined : 0;
const database = await benchDatabase("trace");
const logger = createLogger("trace", "warn");
const stack = await startStack({ mongoUrl: database.url, dbPrefix: `trace_${Date.now()}`, logger, batchMaxWaitMs: bound, services: { ingestion: { maxEventsInFlight: bound } } });
const api = new Api(stack.apiUrl);
const key = (await api.post("/products", { name: "trace" })).body.api_key as string;
let out = 0, acked = 0, busy = 0, timeouts = 0, stop = false;
const held = async () => (await ingestionInFlight.get()).values.reduce((a, v) => a + v.value, 0);
const senders = Array.from({ length: SENDERS }, async () => {
  while (!stop) {
    const body = JSON.stringify(Array.from({ length: BATCH }, (_, i) => ({ id: randomUUID(), user_id: `u${i % 20}`, timestamp: new Date().toISOString(), input_tokens: 10 })));
    out++;
    let wait = 0;
    try {
      const res = await fetch(`${stack.apiUrl}/events/batch`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body, signal: AbortSignal.timeout(10_000) });
      await res.text();
      if (res.status === 200) acked += BATCH;
      else if (res.status === 429) {
        busy++;
        wait = 1000 * Number(res.headers.get("retry-after") ?? 1);
      }
    } catch {
      timeouts++;
    }
    out--;
    if (wait > 0 && !stop) await new Promise((r) => setTimeout(r, wait));
  }
});
const t0 = performance.now();
let stoppedAt = 0;
console.log("t(s)  senders-out  service-held(batches)  => gateway-waiting  db-cmds-out  pool-wait  pool-used  acked  429  timeouts");
for (;;) {
  await new Promise((r) => setTimeout(r, 500));
  const t = (performance.now() - t0) / 1000;
  const h = (await held()) / BATCH;
  console.log(`${t.toFixed(1).padStart(5)}  ${String(out).padStart(11)}  ${h.toFixed(1).padStart(21)}  ${Math.max(0, out - h).toFixed(1).padStart(17)}  ${String(db.out).padStart(11)}  ${String(db.poolWait).padStart(9)}  ${String(db.poolUsed).padStart(9)}  ${acked}  ${busy}  ${timeouts}`);
  if (!stop && t >= SECONDS) { stop = true; stoppedAt = t; console.log("-- senders stop"); }
  if (stop && out === 0 && h === 0) { console.log(`service held nothing ${(t - stoppedAt).toFixed(1)} s after the senders stopped; max db commands out ${db.maxOut}`); break; }
}
await Promise.all(senders);
await stack.close();
await database.stop();
