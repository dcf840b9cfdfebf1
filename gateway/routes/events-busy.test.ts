import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ingestionInFlight } from "@meter/lib/metrics";
import { heldDirectory } from "../../services/ingestion/testing/held-directory.ts";
import { eventually } from "../../test/support/eventually.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";

// An ingestion replica holding its bound of events answers further batches 429 with Retry-After
// at once (gateway/errors.ts maps the service's resource_exhausted with a retry hint).
const held = heldDirectory("held-user");
const t = suite<{ stack: TestStack }>("usage ingestion over HTTP: a replica at its bound of events in flight");

t.before(async (ctx) => {
  ctx.stack = await startTestStack({ services: { ingestion: { maxEventsInFlight: 10, users: held.directory } } });
  held.connect(ctx.stack.rpcUrl);
});
t.after(async (ctx) => {
  held.release();
  await ctx.stack.close();
});

const events = (userId: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: randomUUID(), user_id: userId, timestamp: new Date().toISOString(), input_tokens: 100 + i }));

t("a batch beyond the bound is 429 with Retry-After, stores nothing, and passes when sent again after", async ({ stack }) => {
  const { api } = await stack.newProduct();
  for (const u of ["held-user", "other-user"]) assert.is((await api.post("/users", { external_user_id: u })).status, 201);
  // Ten events held in flight (the bound) until the test lets them go.
  held.arm();
  const first = api.post("/events/batch", events("held-user", 10));
  await held.entered();
  const second = events("other-user", 2);
  const busy = await api.post("/events/batch", second);
  assert.is(busy.status, 429, JSON.stringify(busy.body));
  const retryAfter = busy.headers.get("retry-after");
  assert.ok(retryAfter !== null && /^[1-9]\d*$/.test(retryAfter), `Retry-After: ${retryAfter}`);
  assert.equal(Object.keys(busy.body), ["detail"]);
  assert.match(busy.body.detail, /holds 10 events not yet stored \(at most 10\); retry in \d+ s/);
  // A gate-event batch counts against the same bound.
  const gate = await api.post("/gate-events/batch", [
    { id: randomUUID(), user_id: "other-user", timestamp: new Date().toISOString(), status: "soft_gate", gate_reason: "total_spend", usage_pct: 0.9, current_value: 9, limit_value: 10 },
  ]);
  assert.is(gate.status, 429, JSON.stringify(gate.body));
  assert.ok(gate.headers.get("retry-after"));
  // Nothing of the refused batch was stored.
  assert.is((await api.get("/users/other-user/usage")).body.total_tokens, 0);
  held.release();
  assert.equal((await first).body, { accepted: 10, duplicates: 0 });
  // The same batch again once the replica has room: stored once.
  const again = await api.post("/events/batch", second);
  assert.is(again.status, 200, JSON.stringify(again.body));
  assert.equal(again.body, { accepted: 2, duplicates: 0 });
  assert.is((await api.get("/users/other-user/usage")).body.total_tokens, 201);
  assert.is((await api.get("/users/held-user/usage")).body.total_tokens, 10 * 100 + 45);
});

t("clients that give up while their batches are being stored leave no admission place taken", async ({ stack }) => {
  const { api, apiKey } = await stack.newProduct();
  assert.is((await api.post("/users", { external_user_id: "held-user" })).status, 201);
  // As many batches as the gateway runs for one product (4), each held in the service.
  held.arm();
  const clients = Array.from({ length: 4 }, () => new AbortController());
  const sent = clients.map((c) =>
    fetch(`${stack.apiUrl}/events/batch`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify(events("held-user", 1)),
      signal: c.signal,
    }).catch((err: Error) => err.name),
  );
  await eventually(async () => (await ingestionInFlight.get()).values.reduce((a, v) => a + v.value, 0) === 4, 60_000, "4 batches in the service");
  // Their clients time out, the batches still in the service.
  for (const c of clients) c.abort();
  assert.equal(await Promise.all(sent), ["AbortError", "AbortError", "AbortError", "AbortError"]);
  held.release();
  // The product's next batch is admitted (each abandoned batch used to keep its place for good).
  const next = await fetch(`${stack.apiUrl}/events/batch`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify(events("held-user", 3)),
    signal: AbortSignal.timeout(60_000),
  });
  assert.is(next.status, 200);
  assert.equal(await next.json(), { accepted: 3, duplicates: 0 });
  // The abandoned ones were stored all the same, once.
  await eventually(async () => (await api.get("/users/held-user/usage")).body.total_tokens === 4 * 100 + 3 * 100 + 3);
});

t.run();
