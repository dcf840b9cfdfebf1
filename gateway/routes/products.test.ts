import { suite } from "uvu";
import * as assert from "uvu/assert";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";

const t = suite<{ stack: TestStack }>("gateway: products and authentication");

t.before(async (ctx) => {
  ctx.stack = await startTestStack();
});
t.after(async (ctx) => {
  await ctx.stack.close();
});

t("POST /products returns 201 with the product and its key, once", async ({ stack }) => {
  const res = await stack.api.post("/products", { name: "Acme", contact_name: "Ada", contact_email: "ada@acme.test" });
  assert.is(res.status, 201);
  assert.match(res.body.id, /^[0-9a-f-]{36}$/);
  assert.is(res.body.name, "Acme");
  assert.is(res.body.slug, "acme");
  assert.is(res.body.contact_name, "Ada");
  assert.is(res.body.contact_email, "ada@acme.test");
  assert.ok(!Number.isNaN(Date.parse(res.body.created_at)));
  assert.match(res.body.api_key, /^mk_/);

  const list = await stack.api.withKey(res.body.api_key).get("/products");
  assert.is(list.status, 200);
  assert.is(list.body.length, 1);
  assert.is(list.body[0].id, res.body.id);
  assert.is(list.body[0].api_key, undefined);
  assert.not.ok(JSON.stringify(list.body).includes(res.body.api_key));
});

t("contact fields default to null", async ({ stack }) => {
  const res = await stack.api.post("/products", { name: "Bare" });
  assert.is(res.status, 201);
  assert.is(res.body.contact_name, null);
  assert.is(res.body.contact_email, null);
});

t("each key lists only its own product", async ({ stack }) => {
  const a = await stack.newProduct("A");
  const b = await stack.newProduct("B");
  const la = await a.api.get("/products");
  const lb = await b.api.get("/products");
  assert.equal(la.body.map((p: { id: string }) => p.id), [a.productId]);
  assert.equal(lb.body.map((p: { id: string }) => p.id), [b.productId]);
});

t("missing, malformed and unknown keys give 401 with a detail", async ({ stack }) => {
  const missing = await stack.api.get("/products");
  assert.is(missing.status, 401);
  assert.type(missing.body.detail, "string");
  const malformed = await stack.api.get("/products", { headers: { authorization: "Basic abc" } });
  assert.is(malformed.status, 401);
  assert.type(malformed.body.detail, "string");
  const unknown = await stack.api.withKey("mk_" + "A".repeat(43)).get("/products");
  assert.is(unknown.status, 401);
  assert.is(unknown.body.detail, "invalid API key");
  const garbage = await stack.api.withKey("nonsense").get("/products");
  assert.is(garbage.status, 401);
});

t("body validation failures give 422 listing every issue", async ({ stack }) => {
  const res = await stack.api.post("/products", { name: "", contact_email: "nope", extra: 1 });
  assert.is(res.status, 422);
  assert.type(res.body.detail, "string");
  const paths = res.body.issues.map((i: { path: string }) => i.path).sort();
  assert.equal(paths, ["/contact_email", "/extra", "/name"]);
  const long = await stack.api.post("/products", { name: "x".repeat(256) });
  assert.is(long.status, 422);
  // 255 characters whatever they are (an emoji is two UTF-16 units).
  assert.is((await stack.api.post("/products", { name: "😀".repeat(256) })).status, 422);
  const wide = await stack.api.post("/products", { name: "😀".repeat(255) });
  assert.is(wide.status, 201, JSON.stringify(wide.body));
  const missing = await stack.api.post("/products", {});
  assert.is(missing.status, 422);
  assert.equal(missing.body.issues.map((i: { path: string }) => i.path), ["/name"]);
  const wrongType = await stack.api.post("/products", { name: 42 });
  assert.is(wrongType.status, 422);
});

t("whitespace-only names are refused by the service with 400", async ({ stack }) => {
  const res = await stack.api.post("/products", { name: "   " });
  assert.is(res.status, 400);
  assert.match(res.body.detail, /name/);
});

t("malformed JSON, empty bodies and non-JSON bodies answer with a detail", async ({ stack }) => {
  const bad = await stack.api.request("POST", "/products", { rawBody: "{nope" });
  assert.is(bad.status, 400);
  assert.type(bad.body.detail, "string");
  const empty = await stack.api.request("POST", "/products", { rawBody: "" });
  assert.is(empty.status, 400);
  assert.type(empty.body.detail, "string");
  const text = await stack.api.request("POST", "/products", { rawBody: "name=x", headers: { "content-type": "application/x-www-form-urlencoded" } });
  assert.is(text.status, 415);
  assert.type(text.body.detail, "string");
});

t("unknown routes give 404 with a detail, with or without a key", async ({ stack }) => {
  const res = await stack.api.get("/no-such-thing");
  assert.is(res.status, 404);
  assert.type(res.body.detail, "string");
  const outside = await stack.api.request("GET", "/../../elsewhere");
  assert.is(outside.status, 404);
});

t("the request id is echoed, and a caller's id is kept", async ({ stack }) => {
  const generated = await stack.api.get("/health");
  assert.match(generated.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
  const given = await stack.api.get("/health", { headers: { "x-request-id": "trace-123" } });
  assert.is(given.headers.get("x-request-id"), "trace-123");
});

t("health answers ok and connected", async ({ stack }) => {
  const res = await stack.api.get("/health");
  assert.is(res.status, 200);
  assert.equal(res.body, { status: "ok", database: "connected" });
});

t("the OpenAPI document describes the routes and the docs page is served", async ({ stack }) => {
  const doc = await stack.api.get("/openapi.json");
  assert.is(doc.status, 200);
  assert.is(doc.body.openapi, "3.1.0");
  assert.ok(doc.body.paths["/api/v1/products"].post);
  assert.ok(doc.body.paths["/api/v1/products"].get);
  assert.ok(doc.body.paths["/api/v1/health"].get);
  assert.ok(doc.body.paths["/api/v1/products"].post.requestBody);
  const page = await fetch(`${stack.apiUrl}/docs/`, { redirect: "follow" });
  assert.is(page.status, 200);
  assert.match(await page.text(), /<html/i);
});

t.run();
