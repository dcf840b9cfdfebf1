// The small ways into the API an attacker holding one key (or none) tried, each over real HTTP:
// ids that UTF-8 cannot keep apart or URLs cannot carry, the reference page's third parties
// and inline scripts, platform metrics on the public port, product creation without limit,
// IPv4 hidden in IPv6 webhook targets, bodies that are not JSON, and errors Fastify or Node
// answer themselves.
import { createHash } from "node:crypto";
import net from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { LOCAL_PROTECTION } from "../gateway/config.ts";
import type { Api } from "./support/http.ts";
import { startTestStack, type TestStack } from "./support/stack.ts";

const t = suite<{ stack: TestStack; api: Api }>("api hardening");

t.before(async (ctx) => {
  ctx.stack = await startTestStack({
    protection: { ...LOCAL_PROTECTION, rateLimit: { ...LOCAL_PROTECTION.rateLimit, productCreateMax: 3 } },
  });
  ctx.api = (await ctx.stack.newProduct("Hardened")).api;
});
t.after(async (ctx) => {
  await ctx.stack.close();
});

const detailOnly = (body: unknown) => assert.equal(Object.keys(body as object), ["detail"], JSON.stringify(body));

t("ids with unpaired surrogates are refused, not folded into one user", async ({ api }) => {
  // JSON escapes a lone surrogate as \ud800; UTF-8 would store each as U+FFFD.
  for (const id of ["a\ud800", "a\udfff", "\udc00b"]) {
    const created = await api.post("/users", { external_user_id: id });
    assert.is(created.status, 422, JSON.stringify(created.body));
    assert.match(created.body.issues[0].path, /external_user_id/);
    assert.match(created.body.detail, /unpaired surrogates/);
    const event = await api.post("/events", { user_id: id, cost: 1 });
    assert.is(event.status, 422, JSON.stringify(event.body));
  }
  // A pair (an astral character) and U+FFFD itself are ordinary characters.
  assert.is((await api.post("/users", { external_user_id: "a\u{1F600}" })).status, 201);
  assert.is((await api.post("/users", { external_user_id: "a\ufffd" })).status, 201);
  // In a path, a surrogate can only be spelt as invalid UTF-8: a bad URL, answered {"detail"}.
  const path = await api.get("/users/a%ED%A0%80/usage");
  assert.is(path.status, 400);
  detailOnly(path.body);
});

t('users named "." or ".." are refused wherever an id is taken', async ({ stack, api }) => {
  for (const id of [".", ".."]) {
    const created = await api.post("/users", { external_user_id: id });
    assert.is(created.status, 422, JSON.stringify(created.body));
    assert.match(created.body.detail, /"\." or "\.\."/);
    assert.is((await api.post("/events", { user_id: id, cost: 1 })).status, 422);
    // Only a raw request carries one in a path: clients resolve "." and ".." (and %2E) as dot segments.
    const read = await rawRequest(stack.apiUrl, `GET /api/v1/users/${id.replaceAll(".", "%2E")}/session HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${api.key}\r\nConnection: close\r\n\r\n`);
    assert.is(read.status, 400, read.body);
  }
  assert.is((await api.post("/users", { external_user_id: "..." })).status, 201);
});

t("the reference page loads nothing from another origin and runs no inline script but its own, by hash", async ({ stack }) => {
  const res = await fetch(stack.apiUrl + "/docs/");
  assert.is(res.status, 200);
  const html = await res.text();
  const csp = res.headers.get("content-security-policy") ?? "";
  const scriptSrc = csp.split("; ").find((d) => d.startsWith("script-src ")) ?? "";
  assert.not.match(scriptSrc, /unsafe-inline/);
  const inline = [...html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
  assert.is(inline.length, 1);
  assert.ok(scriptSrc.includes(`'sha256-${createHash("sha256").update(inline[0]!).digest("base64")}'`), scriptSrc);
  assert.match(inline[0]!, /"withDefaultFonts": false/);
  for (const d of ["font-src", "img-src"]) assert.not.match(csp.split("; ").find((x) => x.startsWith(d)) ?? "", /https:|\*/, d);
});

t("platform metrics are not on the public port, only on the internal one", async ({ stack }) => {
  const pub = await fetch(new URL("/metrics", stack.apiUrl));
  assert.is(pub.status, 404);
  const internal = await fetch(`${stack.rpcUrl}/metrics`);
  assert.is(internal.status, 200);
  assert.match(await internal.text(), /meter_http_requests_total/);
});

t("products created per address are limited apart: 429 with Retry-After, other keyless routes served", async ({ stack }) => {
  // One product was created in before(); two more fit in the window of three.
  for (let i = 0; i < 2; i++) assert.is((await stack.api.post("/products", { name: `P${i}` })).status, 201);
  const refused = await stack.api.post("/products", { name: "One too many" });
  assert.is(refused.status, 429);
  detailOnly(refused.body);
  assert.ok(Number(refused.headers.get("retry-after")) >= 1, `Retry-After ${refused.headers.get("retry-after")}`);
  assert.is((await stack.api.get("/health")).status, 200);
});

t("webhook targets with IPv4 inside IPv6 are refused", async ({ api }) => {
  for (const url of ["https://[::127.0.0.1]/hook", "https://[::ffff:127.0.0.1]/hook", "https://[::ffff:8.8.8.8]/hook", "https://[64:ff9b::a00:1]/hook"]) {
    const res = await api.post("/webhooks/endpoints", { url, subscribed_events: ["usage.threshold.50"] });
    assert.ok(res.status === 400 || res.status === 422, `${url}: ${res.status} ${JSON.stringify(res.body)}`);
    assert.match(res.body.detail, /publicly reachable/);
  }
});

t("a body that is not JSON is 415 {detail}", async ({ api }) => {
  const res = await api.request("POST", "/users", { rawBody: "external_user_id=x", headers: { "content-type": "text/plain" } });
  assert.is(res.status, 415);
  detailOnly(res.body);
  assert.match(res.body.detail, /text\/plain/);
});

t("undeclared methods on known paths are 405 with Allow; unknown paths stay 404", async ({ api }) => {
  const put = await api.request("PUT", "/users");
  assert.is(put.status, 405);
  assert.is(put.headers.get("allow"), "GET, HEAD, POST");
  detailOnly(put.body);
  const del = await api.request("DELETE", "/users/u1/session", { rawBody: "x", headers: { "content-type": "text/plain" } });
  assert.is(del.status, 405, "answered before the body's type is looked at");
  assert.is(del.headers.get("allow"), "GET, HEAD");
  assert.is((await api.request("PUT", "/nowhere")).status, 404);
});

t("unknown query parameters are refused like unknown body fields", async ({ api }) => {
  const res = await api.get("/analytics/summary?dayz=7");
  assert.is(res.status, 400);
  assert.match(res.body.detail, /dayz is not a known field/);
  assert.is((await api.get("/analytics/summary")).status, 200, "days has a default");
  // A route that reads no parameter refuses any.
  const none = await api.get("/products?verbose=1");
  assert.is(none.status, 400);
  assert.match(none.body.detail, /verbose is not a known field/);
});

/** One raw HTTP/1.1 exchange: Node's parser refuses some requests before Fastify sees them. */
function rawRequest(apiUrl: string, request: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(apiUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.end(request));
    let data = "";
    socket.on("data", (d) => (data += d));
    socket.on("error", reject);
    socket.on("close", () => resolve({ status: Number(data.split(" ")[1]), body: data.slice(data.indexOf("\r\n\r\n") + 4) }));
  });
}

t("bad URLs and oversized headers are answered {detail} too", async ({ stack, api }) => {
  const bad = await fetch(stack.apiUrl + "/users/%E0%A4%A/session");
  assert.is(bad.status, 400);
  detailOnly(await bad.json());
  assert.ok(bad.headers.get("x-request-id"));
  // A malformed query is refused the same way, not read literally; a well-formed one is read.
  for (const query of ["prefix=%E0%A4", "prefix=%zz", "cursor=abc%"]) {
    const res = await api.get(`/users?${query}`);
    assert.is(res.status, 400, query);
    assert.match(res.body.detail, /query string is not well-formed/);
    assert.ok(res.headers.get("x-request-id"), "the request id is sent");
  }
  assert.is((await api.get("/users?prefix=%E2%82%AC%20a&limit=%31")).status, 200);
  const big = await rawRequest(stack.apiUrl, `GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\nConnection: close\r\n\r\n`);
  assert.is(big.status, 431);
  detailOnly(JSON.parse(big.body));
  const garbage = await rawRequest(stack.apiUrl, "NOT HTTP AT ALL\r\n\r\n");
  assert.is(garbage.status, 400);
  detailOnly(JSON.parse(garbage.body));
});

t.run();
