// Portal tokens and GET /portal/me against the whole stack (real gRPC, real HTTP): a token reads
// its own user and nothing else, is refused at the first request after its expiry or revocation
// (the gateway caches no portal token), is rate-limited on its own, and only /portal/* answers with CORS headers.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MongoClient } from "mongodb";
import { hashPortalToken } from "@meter/lib/portal-tokens";
import { LOCAL_PROTECTION } from "../config.ts";
import { eventually } from "../../test/support/eventually.ts";
import type { Api } from "../../test/support/http.ts";
import { gateEventJson, must, tokenUsageJson } from "../../test/support/rest.ts";
import { withTestStack, type TestStack } from "../../test/support/stack.ts";
import { buildWidgetIfStale } from "../widget/build.ts";

/** Requests a portal token may make per window here: each check below mints its own token. */
const PORTAL_MAX = 6;

const t = suite<{ stack: TestStack; mongo: MongoClient; api: Api; ingest: Api; other: Api }>("portal tokens and /portal/me");
withTestStack(t, {
  authCacheTtlMs: 2_000,
  protection: { ...LOCAL_PROTECTION, rateLimit: { ...LOCAL_PROTECTION.rateLimit, portalMax: PORTAL_MAX } },
});

const DAY = 86_400_000;
const mint = async (api: Api, user: string, body: unknown = { ttl_seconds: 600 }) => (await must(api.post(`/users/${user}/portal-tokens`, body), 201)).token as string;
const asToken = (api: Api, token: string) => api.withKey(token);

t.before(async (ctx) => {
  await buildWidgetIfStale();
  const { api, apiKey } = await ctx.stack.newProduct("Portal");
  ctx.api = api;
  ctx.ingest = api.withKey((await must(api.post("/keys", { name: "ingest", scope: "ingest" }), 201)).key);
  ctx.other = (await ctx.stack.newProduct("Other")).api;
  void apiKey;
  const { plans } = await must(
    api.post("/config/plans", {
      plans: [{ name: "pro", max_spend_per_period: 10, model_limits: { "gpt-4.1": { max_tokens_per_period: 100_000 } }, limits: [{ name: "daily", metric: "spend", max: 2, window: "day" }] }],
    }),
    201,
  );
  for (const user of ["alice", "bob"]) {
    await must(api.post("/users", { external_user_id: user }), 201);
    await must(
      api.post(`/users/${user}/subscription`, { plan_id: plans[0].id, period_start: new Date(Date.now() - DAY).toISOString(), period_end: new Date(Date.now() + 20 * DAY).toISOString() }),
      200,
    );
  }
  await must(api.post("/events/batch", [tokenUsageJson("alice", "gpt-4.1", 1.5, 20_000), tokenUsageJson("alice", "gpt-4o-mini", 0.25, 5_000), tokenUsageJson("bob", "gpt-4.1", 9, 1_000)]), 200);
  const gates = Array.from({ length: 22 }, (_, i) =>
    gateEventJson("alice", { timestamp: new Date(Date.now() - (22 - i) * 1000).toISOString(), blocked: false, message: `gate ${i}`, metadata: { internal: "not for end users" } }),
  );
  await must(api.post("/gate-events/batch", gates), 200);
  await eventually(async () => (await api.get("/users/alice/gate-events?limit=100")).body.events?.length === 22, 20_000, "alice's gate events listed");
  await eventually(async () => (await api.get("/users/alice/usage")).body.total_cost === 1.75, 20_000, "alice's usage counted");
});

t("an admin or ingest key mints a token for an existing user, with a bounded lifetime", async ({ api, ingest, other }) => {
  const before = Date.now();
  const res = await must(api.post("/users/alice/portal-tokens", {}), 201);
  assert.match(res.token, /^mpt_[A-Za-z0-9_-]{43}$/);
  assert.is(res.user_id, "alice");
  const lifetime = Date.parse(res.expires_at) - before;
  assert.ok(lifetime > 3_590_000 && lifetime <= 3_610_000, `default lifetime ${lifetime} ms`);
  // ttl_seconds has its default without a body too, or with an empty one.
  for (const bare of [{}, { rawBody: "", headers: { "content-type": "application/json" } }]) {
    const minted = await api.request("POST", "/users/alice/portal-tokens", bare);
    assert.is(minted.status, 201, JSON.stringify(minted.body));
    const ttl = Date.parse(minted.body.expires_at) - before;
    assert.ok(ttl > 3_590_000 && ttl <= 3_610_000, `default lifetime ${ttl} ms`);
  }
  const viaIngest = await must(ingest.post("/users/alice/portal-tokens", { ttl_seconds: 86_400 }), 201);
  assert.ok(Date.parse(viaIngest.expires_at) - before > 86_390_000);
  for (const ttl_seconds of [59, 86_401, 1.5]) assert.is((await api.post("/users/alice/portal-tokens", { ttl_seconds })).status, 422, String(ttl_seconds));
  assert.is((await api.post("/users/nobody/portal-tokens", { ttl_seconds: 60 })).status, 404);
  // alice of another product does not exist there.
  assert.is((await other.post("/users/alice/portal-tokens", { ttl_seconds: 60 })).status, 404);
  // A portal token cannot mint another.
  assert.is((await asToken(api, res.token).post("/users/alice/portal-tokens", { ttl_seconds: 60 })).status, 401);
});

t("GET /portal/me: the token's user's plan, every dimension, usage by model and the latest 20 gate events", async ({ api }) => {
  const token = await mint(api, "alice");
  const me = await must(asToken(api, token).get("/portal/me"), 200);
  assert.is(me.user_id, "alice");
  assert.is(me.plan, "pro");
  const limits = (await must(api.get("/users/alice/limits"), 200)).limits;
  assert.equal(me.limits, limits);
  assert.equal(
    me.limits.map((d: { reason: string }) => d.reason),
    ["total_spend", "model_limit:gpt-4.1", "limit:daily"],
  );
  const total = me.limits[0];
  assert.equal([total.used, total.max, total.pct], [1.75, 10, 0.175]);
  assert.ok(Date.parse(total.resets_at) > Date.now());
  assert.is(me.credits, null);
  assert.equal(me.usage, {
    period_cost: 1.75,
    period_tokens_total: 25_000,
    by_model: [
      { model: "gpt-4.1", cost: 1.5, tokens: 20_000 },
      { model: "gpt-4o-mini", cost: 0.25, tokens: 5_000 },
    ],
  });
  assert.is(me.gate_events.length, 20);
  assert.equal(
    me.gate_events.map((e: { message: string }) => e.message),
    Array.from({ length: 20 }, (_, i) => `gate ${21 - i}`),
  );
  assert.not.ok("metadata" in me.gate_events[0], "gate event metadata is the product's, not the end user's");
  assert.ok(Date.parse(me.billing_period.end) > Date.now());
});

t("credits: the balance and grants without their metadata when the plan has credits", async ({ api }) => {
  const { plans } = await must(api.post("/config/plans", { plans: [{ name: "prepaid", max_spend_per_period: 0, credits_enabled: true }] }), 201);
  await must(api.post("/users", { external_user_id: "carol" }), 201);
  await must(
    api.post("/users/carol/subscription", { plan_id: plans[0].id, period_start: new Date(Date.now() - DAY).toISOString(), period_end: new Date(Date.now() + 20 * DAY).toISOString() }),
    200,
  );
  await must(api.post("/users/carol/credits", { id: "pay-1", amount: 3.2, description: "top-up", metadata: { card: "visa-4242" } }), 201);
  const me = await must(asToken(api, await mint(api, "carol")).get("/portal/me"), 200);
  assert.is(me.credits.balance, 3.2);
  assert.is(me.credits.grants.length, 1);
  assert.equal([me.credits.grants[0].id, me.credits.grants[0].remaining, me.credits.grants[0].description], ["pay-1", 3.2, "top-up"]);
  assert.not.ok("metadata" in me.credits.grants[0], "grant metadata is the product's");
  assert.not.ok(JSON.stringify(me).includes("visa-4242"));
  // A hard gate of the credits that ran out, as the client libraries write it: the portal says so, and shows no other metadata.
  const ran = gateEventJson("carol", { status: "hard_gate", gate_reason: "total_spend", blocked: true, metadata: { credits: { balance: 0, low_at: 0.5 }, order: "o-9" } });
  await must(api.post("/gate-events/batch", [ran]), 200);
  await eventually(async () => (await api.get("/users/carol/gate-events")).body.events?.length === 1, 20_000, "carol's gate event listed");
  const after = await must(asToken(api, await mint(api, "carol")).get("/portal/me"), 200);
  assert.equal(after.gate_events[0].credits, { balance: 0, low_at: 0.5 });
  assert.not.ok(JSON.stringify(after.gate_events).includes("o-9"), "the product's own metadata stays out");
});

t("a portal token gets 401 on every route but /portal/me, its own user's included", async ({ api, stack }) => {
  const token = await mint(api, "alice");
  const asAlice = asToken(api, token);
  const doc = (await stack.api.get("/openapi.json")).body;
  const tried: string[] = [];
  for (const [path, item] of Object.entries<Record<string, { security?: unknown[] }>>(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
      // Keyless routes (health, product creation, the widget) answer anyone.
      if (Array.isArray(op.security) && op.security.length === 0) continue;
      if (path === "/api/v1/portal/me") continue;
      const url = path.replace(/^\/api\/v1/, "").replace(/\{user_id\}/g, "alice").replace(/\{[^}]+\}/g, "x");
      const res = await asAlice.request(method.toUpperCase(), url, method === "get" || method === "delete" ? {} : { body: {} });
      assert.is(res.status, 401, `${method.toUpperCase()} ${url}: ${res.status} ${JSON.stringify(res.body)}`);
      tried.push(`${method} ${url}`);
    }
  }
  assert.ok(tried.length > 30, `only ${tried.length} routes tried`);
  assert.ok(tried.includes("get /users/alice/session") && tried.includes("get /users/alice/limits"), "its own user's routes");
  // Another user's state is out of reach: the token names its user, no route takes another.
  assert.is((await asAlice.get("/users/bob/session")).status, 401);
  assert.match((await asAlice.get("/users/bob/usage")).body.detail, /portal token reads GET \/portal\/me only/);
  // An API key is not a portal token either.
  assert.is((await api.get("/portal/me")).status, 401);
  assert.is((await api.withKey(undefined).get("/portal/me")).status, 401);
});

t("bob's token reads bob, and a token of another product reads that product's user", async ({ api, other }) => {
  const bob = await must(asToken(api, await mint(api, "bob")).get("/portal/me"), 200);
  assert.is(bob.user_id, "bob");
  assert.is(bob.usage.period_cost, 9);
  await must(other.post("/users", { external_user_id: "alice" }), 201);
  const elsewhere = await must(asToken(other, await mint(other, "alice")).get("/portal/me"), 200);
  assert.equal([elsewhere.plan, elsewhere.usage.period_cost, elsewhere.gate_events], ["none", 0, []]);
});

t("revoking a user's tokens refuses them at the next request, on a gateway that had just accepted them; other users' stay", async ({ api, ingest }) => {
  const [a1, a2, b] = [await mint(api, "alice"), await mint(api, "alice"), await mint(api, "bob")];
  for (const token of [a1, a2, b]) await must(asToken(api, token).get("/portal/me"), 200);
  const revoked = await must(ingest.delete("/users/alice/portal-tokens"), 200);
  // Earlier tests' tokens of alice count too.
  assert.is(revoked.user_id, "alice");
  assert.ok(revoked.revoked >= 2, `${revoked.revoked} revoked`);
  assert.is((await asToken(api, a1).get("/portal/me")).status, 401, "the revoked token refused at once");
  assert.is((await asToken(api, a2).get("/portal/me")).status, 401, "the other revoked token refused at once");
  assert.is((await asToken(api, b).get("/portal/me")).status, 200);
  assert.is((await api.delete("/users/nobody/portal-tokens")).status, 404);
  // A token minted after the revocation works.
  await must(asToken(api, await mint(api, "alice")).get("/portal/me"), 200);
});

t("an expired token gets 401 saying so, at the first request after its expiry", async ({ api, stack, mongo }) => {
  const token = await mint(api, "alice", { ttl_seconds: 60 });
  await must(asToken(api, token).get("/portal/me"), 200);
  // Its expiry moved to now, as if its 60 s had passed.
  await mongo.db(`${stack.dbPrefix}_tenancy`).collection("portal_tokens").updateOne({ _id: hashPortalToken(token) as never }, { $set: { expires_at: new Date() } });
  const refused = await asToken(api, token).get("/portal/me");
  assert.is(refused.status, 401);
  assert.match(refused.body.detail, /expired/);
});

t("each token has its own rate limit: 429 with Retry-After past it", async ({ api }) => {
  const token = await mint(api, "alice");
  for (let i = 0; i < PORTAL_MAX; i++) await must(asToken(api, token).get("/portal/me"), 200);
  const refused = await asToken(api, token).get("/portal/me");
  assert.is(refused.status, 429);
  assert.ok(Number(refused.headers.get("retry-after")) > 0, "Retry-After");
  assert.is(refused.headers.get("access-control-allow-origin"), "*", "the widget can read the 429");
  // Another token of the same user, and the product's own key, are not held back.
  await must(asToken(api, await mint(api, "alice")).get("/portal/me"), 200);
  await must(api.get("/users/alice/limits"), 200);
});

t("CORS: /portal/* answers any origin (preflight included, errors included); no other route has CORS headers", async ({ api, stack }) => {
  const origin = { origin: "https://app.example.test" };
  const token = await mint(api, "alice");
  const ok = await asToken(api, token).get("/portal/me", { headers: origin });
  assert.is(ok.headers.get("access-control-allow-origin"), "*");
  assert.is(ok.headers.get("access-control-allow-credentials"), null);
  const preflight = await api.withKey(undefined).request("OPTIONS", "/portal/me", {
    headers: { ...origin, "access-control-request-method": "GET", "access-control-request-headers": "authorization" },
  });
  assert.is(preflight.status, 204);
  assert.is(preflight.headers.get("access-control-allow-origin"), "*");
  assert.match(preflight.headers.get("access-control-allow-headers") ?? "", /authorization/);
  assert.match(preflight.headers.get("access-control-allow-methods") ?? "", /GET/);
  const refused = await api.withKey("mpt_" + "A".repeat(43)).get("/portal/me", { headers: origin });
  assert.is(refused.status, 401);
  assert.is(refused.headers.get("access-control-allow-origin"), "*");
  const widget = await api.withKey(undefined).get("/portal/widget.js", { headers: origin });
  assert.is(widget.status, 200);
  assert.match(widget.headers.get("content-type") ?? "", /javascript/);
  assert.match(widget.body, /meter-usage/);
  assert.is(widget.headers.get("access-control-allow-origin"), "*");
  assert.is(widget.headers.get("cross-origin-resource-policy"), "cross-origin");

  const doc = (await stack.api.get("/openapi.json")).body;
  let checked = 0;
  for (const [path, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
    if (path.startsWith("/api/v1/portal/")) continue;
    const url = path.replace(/^\/api\/v1/, "").replace(/\{user_id\}/g, "alice").replace(/\{[^}]+\}/g, "x");
    for (const method of [...Object.keys(item).filter((m) => ["get", "post", "put", "patch", "delete"].includes(m)), "options"]) {
      const res = await api.request(method.toUpperCase(), url, { headers: { ...origin, "access-control-request-method": "GET" } });
      const cors = [...res.headers.keys()].filter((h) => h.startsWith("access-control-"));
      assert.equal(cors, [], `${method.toUpperCase()} ${url} answered ${cors.join(", ")}`);
      assert.is(res.headers.get("cross-origin-resource-policy"), "same-origin", `${method} ${url}`);
      checked++;
    }
  }
  assert.ok(checked > 40, `${checked} checked`);
  for (const url of ["/api/v1/openapi.json", "/api/v1/docs", "/console/"]) {
    const res = await fetch(new URL(url, stack.apiUrl), { headers: origin });
    assert.is(res.headers.get("access-control-allow-origin"), null, url);
  }
});

t.run();
