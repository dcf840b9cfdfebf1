import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { type TestStack, withWebhookStack } from "../../test/support/stack.ts";
import { Receiver, signatureValid } from "../../services/webhooks/testing/receiver.ts";
import { eventually } from "../../test/support/eventually.ts";
import { freePort } from "../../test/support/processes.ts";

const t = suite<{ stack: TestStack; rx: Receiver }>("gateway: webhook endpoints");

withWebhookStack(t);

const EVENTS = ["usage.threshold.50", "gate_event.blocked"];

t("POST creates (201, with secret); GET lists without secrets; GET secret reveals it", async ({ stack, rx }) => {
  const { api } = await stack.newProduct();
  const res = await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: EVENTS });
  assert.is(res.status, 201);
  assert.match(res.body.id, /^[0-9a-f-]{36}$/);
  assert.is(res.body.url, rx.url);
  assert.equal(res.body.subscribed_events, EVENTS);
  assert.is(res.body.description, null);
  assert.is(res.body.enabled, true);
  assert.ok(!Number.isNaN(Date.parse(res.body.created_at)));
  assert.match(res.body.secret, /^whsec_/);
  assert.equal(Object.keys(res.body).sort(), ["created_at", "description", "enabled", "id", "secret", "subscribed_events", "url"]);

  const list = await api.get("/webhooks/endpoints");
  assert.is(list.status, 200);
  assert.is(list.body.length, 1);
  assert.is(list.body[0].secret, undefined);
  assert.not.ok(JSON.stringify(list.body).includes(res.body.secret));

  const secret = await api.get(`/webhooks/endpoints/${res.body.id}/secret`);
  assert.is(secret.status, 200);
  assert.equal(secret.body, { secret: res.body.secret });
});

t("PATCH changes only the fields sent and returns the full endpoint", async ({ stack, rx }) => {
  const { api } = await stack.newProduct();
  const id = (await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: EVENTS, description: "ops" })).body.id;
  const off = await api.patch(`/webhooks/endpoints/${id}`, { enabled: false });
  assert.is(off.status, 200);
  assert.equal([off.body.enabled, off.body.description, off.body.url, off.body.subscribed_events], [false, "ops", rx.url, EVENTS]);
  const more = await api.patch(`/webhooks/endpoints/${id}`, { subscribed_events: ["usage.summary.weekly"], description: null, enabled: true });
  assert.equal([more.body.enabled, more.body.description, more.body.subscribed_events], [true, null, ["usage.summary.weekly"]]);
  assert.is((await api.patch(`/webhooks/endpoints/${id}`, {})).status, 200);
  assert.is((await api.patch(`/webhooks/endpoints/${id}`, { url: "ftp://x.example/" })).status, 400);
  assert.is((await api.patch(`/webhooks/endpoints/${id}`, { subscribed_events: ["nope"] })).status, 400);
  assert.is((await api.patch(`/webhooks/endpoints/${id}`, { enabled: "yes" })).status, 422);
  assert.is((await api.patch(`/webhooks/endpoints/${id}`, { secret: "x" })).status, 422);
});

t("rotate-secret returns a new secret and test signs with it", async ({ stack, rx }) => {
  const { api } = await stack.newProduct();
  const created = (await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: EVENTS })).body;
  const rotated = await api.post(`/webhooks/endpoints/${created.id}/rotate-secret`);
  assert.is(rotated.status, 200);
  assert.match(rotated.body.secret, /^whsec_/);
  assert.is.not(rotated.body.secret, created.secret);
  const before = rx.received.length;
  const test = await api.post(`/webhooks/endpoints/${created.id}/test`);
  assert.is(test.status, 200);
  assert.is(test.body.success, true);
  assert.is(test.body.status_code, 200);
  assert.type(test.body.response_time_ms, "number");
  const got = rx.received[before]!;
  assert.is(got.json.type, "webhook.test");
  assert.ok(signatureValid(rotated.body.secret, got));
  assert.not.ok(signatureValid(created.secret, got));
});

t("deliveries: 200 page shape, query validation (400), unknown endpoint (404)", async ({ stack, rx }) => {
  const { api } = await stack.newProduct();
  const id = (await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: EVENTS })).body.id;
  const res = await api.get(`/webhooks/endpoints/${id}/deliveries`);
  assert.is(res.status, 200);
  assert.equal(res.body, { deliveries: [], next_cursor: null });
  assert.is((await api.get(`/webhooks/endpoints/${id}/deliveries?status=pending&limit=200`)).status, 200);
  assert.is((await api.get(`/webhooks/endpoints/${id}/deliveries?limit=0`)).status, 400);
  assert.is((await api.get(`/webhooks/endpoints/${id}/deliveries?limit=201`)).status, 400);
  assert.is((await api.get(`/webhooks/endpoints/${id}/deliveries?status=done`)).status, 400);
  assert.is((await api.get(`/webhooks/endpoints/${id}/deliveries?cursor=bogus`)).status, 400);
  assert.is((await api.get(`/webhooks/endpoints/00000000-0000-0000-0000-000000000000/deliveries`)).status, 404);
});

t("a receiver that does not answer: the test says why; the delivery log names the envelope id and why the last attempt failed", async ({ stack, rx }) => {
  const { api } = await stack.newProduct();
  // A port nothing listens on: refused at once.
  const closed = await freePort();
  const dead = (await api.post("/webhooks/endpoints", { url: `http://127.0.0.1:${closed}/hooks`, subscribed_events: ["gate_event.hard_gate"] })).body;
  const test = (await api.post(`/webhooks/endpoints/${dead.id}/test`)).body;
  assert.equal([test.success, test.status_code], [false, 0]);
  assert.match(test.error, /ECONNREFUSED/);
  const live = (await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: ["gate_event.hard_gate"] })).body;
  assert.is((await api.post(`/webhooks/endpoints/${live.id}/test`)).body.error, null, "answered: no error");
  await api.post("/users", { external_user_id: "u1" });
  const gate = { id: randomUUID(), user_id: "u1", timestamp: new Date().toISOString(), status: "hard_gate", gate_reason: "total_spend", usage_pct: 1, current_value: 1, limit_value: 1, blocked: true, message: "spent" };
  assert.is((await api.post("/gate-events/batch", [gate])).status, 200);
  const failed = await eventually(async () => {
    const d = (await api.get(`/webhooks/endpoints/${dead.id}/deliveries`)).body.deliveries[0];
    return d?.last_error ? d : undefined;
  }, 30_000, "the dead endpoint's first attempt");
  assert.match(failed.last_error, /ECONNREFUSED/);
  const delivered = await eventually(async () => {
    const d = (await api.get(`/webhooks/endpoints/${live.id}/deliveries`)).body.deliveries[0];
    return d?.status === "success" ? d : undefined;
  }, 30_000, "the live endpoint's delivery");
  assert.is(delivered.last_error, null);
  // The id the receiver got, and the same event for both endpoints.
  assert.match(delivered.event_id, /^whevt_/);
  assert.is(failed.event_id, delivered.event_id);
  assert.ok(rx.received.some((r) => r.headers["x-service-delivery"] === delivered.event_id));
});

t("DELETE answers 204 and the endpoint is gone", async ({ stack, rx }) => {
  const { api } = await stack.newProduct();
  const id = (await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: EVENTS })).body.id;
  const del = await api.delete(`/webhooks/endpoints/${id}`);
  assert.is(del.status, 204);
  assert.is(del.body, "");
  assert.equal((await api.get("/webhooks/endpoints")).body, []);
  assert.is((await api.delete(`/webhooks/endpoints/${id}`)).status, 404);
  assert.is((await api.get(`/webhooks/endpoints/${id}/deliveries`)).status, 404);
});

t("body problems give 422, rule problems 400", async ({ stack, rx }) => {
  const { api } = await stack.newProduct();
  const missing = await api.post("/webhooks/endpoints", { subscribed_events: EVENTS });
  assert.is(missing.status, 422);
  assert.ok(Array.isArray(missing.body.issues));
  assert.is((await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: "usage.threshold.50" })).status, 422);
  assert.is((await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: EVENTS, extra: 1 })).status, 422);
  assert.is((await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: [] })).status, 400);
  assert.is((await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: ["usage.threshold.90"] })).status, 400);
  const priv = await api.post("/webhooks/endpoints", { url: "http://10.0.0.1/hook", subscribed_events: EVENTS });
  assert.is(priv.status, 400);
  assert.match(priv.body.detail, /private/);
});

t("another product's endpoint is 404 on every route; no key is 401", async ({ stack, rx }) => {
  const a = await stack.newProduct("A");
  const b = await stack.newProduct("B");
  const id = (await a.api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: EVENTS })).body.id;
  assert.is((await b.api.get(`/webhooks/endpoints/${id}/secret`)).status, 404);
  assert.is((await b.api.patch(`/webhooks/endpoints/${id}`, { enabled: false })).status, 404);
  assert.is((await b.api.post(`/webhooks/endpoints/${id}/rotate-secret`)).status, 404);
  assert.is((await b.api.post(`/webhooks/endpoints/${id}/test`)).status, 404);
  assert.is((await b.api.get(`/webhooks/endpoints/${id}/deliveries`)).status, 404);
  assert.is((await b.api.delete(`/webhooks/endpoints/${id}`)).status, 404);
  assert.equal((await b.api.get("/webhooks/endpoints")).body, []);
  assert.is((await stack.api.get("/webhooks/endpoints")).status, 401);
  assert.is((await stack.api.post(`/webhooks/endpoints/${id}/test`)).status, 401);
  assert.is((await a.api.get(`/webhooks/endpoints/${id}/secret`)).status, 200, "the owner still can");
});

t.run();
