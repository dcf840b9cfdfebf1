// Many HTTP clients send `Content-Type: application/json` with every request, also with an
// empty body on a route that takes none: over real HTTP, each such route answers as if no
// header had been sent, and a route that needs a body still refuses an empty one.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Receiver } from "../../services/webhooks/testing/receiver.ts";
import { type TestStack, withWebhookStack } from "../../test/support/stack.ts";

const t = suite<{ stack: TestStack; rx: Receiver }>("gateway: bodiless requests sent with Content-Type: application/json");

withWebhookStack(t);

const EMPTY_JSON = { rawBody: "", headers: { "content-type": "application/json" } };

t("POST test, POST rotate-secret, DELETE endpoint and DELETE key with an empty JSON body", async ({ stack, rx }) => {
  const { api } = await stack.newProduct();
  const id = (await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: ["usage.threshold.50"] })).body.id;

  const tested = await api.request("POST", `/webhooks/endpoints/${id}/test`, EMPTY_JSON);
  assert.is(tested.status, 200, JSON.stringify(tested.body));
  assert.is(tested.body.success, true);

  const rotated = await api.request("POST", `/webhooks/endpoints/${id}/rotate-secret`, EMPTY_JSON);
  assert.is(rotated.status, 200, JSON.stringify(rotated.body));
  assert.match(rotated.body.secret, /^whsec_/);

  const removed = await api.request("DELETE", `/webhooks/endpoints/${id}`, EMPTY_JSON);
  assert.is(removed.status, 204, JSON.stringify(removed.body));
  const left = await api.get("/webhooks/endpoints");
  assert.not.ok(left.body.some((e: { id: string }) => e.id === id), "the endpoint is gone");

  const key = await api.post("/keys", { name: "spare", scope: "ingest" });
  assert.is(key.status, 201, JSON.stringify(key.body));
  const revoked = await api.request("DELETE", `/keys/${key.body.id}`, EMPTY_JSON);
  assert.is(revoked.status, 204, JSON.stringify(revoked.body));
});

t("a route that takes a body still answers an empty one with 400 and says so", async ({ stack }) => {
  const { api } = await stack.newProduct();
  for (const [method, path] of [["POST", "/users"], ["POST", "/events"], ["POST", "/config/plans"]] as const) {
    const res = await api.request(method, path, EMPTY_JSON);
    assert.is(res.status, 400, `${method} ${path}`);
    assert.is(res.body.detail, "request body is empty; send a JSON document", `${method} ${path}`);
  }
  // The document says which bodies may be left out: a client generated from it may send none.
  const doc = (await api.get("/openapi.json")).body;
  assert.is(doc.paths["/api/v1/users/{user_id}/portal-tokens"].post.requestBody.required, false);
  assert.is(doc.paths["/api/v1/users"].post.requestBody.required, true);
  // A body that may be left out is still checked when sent: `null` is not an object.
  assert.is((await api.post("/users", { external_user_id: "u-null" })).status, 201);
  const minted = await api.request("POST", "/users/u-null/portal-tokens", EMPTY_JSON);
  assert.is(minted.status, 201, JSON.stringify(minted.body));
  const nulled = await api.request("POST", "/users/u-null/portal-tokens", { rawBody: "null", headers: { "content-type": "application/json" } });
  assert.is(nulled.status, 422, JSON.stringify(nulled.body));
  assert.is(nulled.body.detail, "body must be object");
  // Not JSON is still not JSON, body or none.
  const id = (await api.post("/keys", { name: "other", scope: "ingest" })).body.id;
  assert.is((await api.request("DELETE", `/keys/${id}`, { rawBody: "{nope", headers: { "content-type": "application/json" } })).status, 400);
});

t.run();
