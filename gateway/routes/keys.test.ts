import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { type TestStack, withWebhookStack } from "../../test/support/stack.ts";
import { eventually } from "../../test/support/eventually.ts";
import { Api } from "../../test/support/http.ts";
import { must } from "../../test/support/rest.ts";
import { createLogger } from "@meter/lib/logger";
import { buildGateway } from "../app.ts";
import { connectClients } from "../clients.ts";
import { Receiver } from "../../services/webhooks/testing/receiver.ts";

const t = suite<{ stack: TestStack; rx: Receiver }>("gateway: API keys");

withWebhookStack(t);

const iso = (ms: number) => new Date(ms).toISOString();

t("POST /keys shows the key once; GET /keys lists keys without secrets; the new key works", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const expires = iso(Date.now() + 86_400_000);
  const res = await api.post("/keys", { name: "ci", scope: "ingest", expires_at: expires });
  assert.is(res.status, 201);
  assert.equal(Object.keys(res.body).sort(), ["created_at", "expires_at", "id", "key", "name", "prefix", "scope"]);
  assert.match(res.body.id, /^[0-9a-f-]{36}$/);
  assert.is(res.body.name, "ci");
  assert.is(res.body.scope, "ingest");
  assert.is(res.body.expires_at, expires);
  assert.match(res.body.key, /^mk_[A-Za-z0-9_-]{43}$/);
  assert.ok(res.body.key.startsWith(res.body.prefix) && res.body.prefix.length >= 8 && res.body.prefix.length < 16);

  const list = await api.get("/keys");
  assert.is(list.status, 200);
  assert.equal(
    list.body.keys.map((k: any) => [k.name, k.scope, k.expires_at]),
    [["default", "admin", null], ["ci", "ingest", expires]],
  );
  for (const k of list.body.keys) {
    assert.equal(Object.keys(k).sort(), ["created_at", "expires_at", "id", "last_used_at", "name", "prefix", "scope"]);
  }
  assert.not.ok(JSON.stringify(list.body).includes(res.body.key), "a secret is listed");

  const admin = await api.post("/keys", { name: "second admin" });
  assert.is(admin.status, 201);
  assert.is(admin.body.scope, "admin", "admin is the default scope");
  assert.is(admin.body.expires_at, null);
  const second = api.withKey(admin.body.key);
  assert.is((await second.get("/keys")).status, 200);
});

t("last_used_at is recorded when a key is used", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const before = Date.now();
  const used = await eventually(async () => {
    const list = await api.get("/keys");
    return list.body.keys[0].last_used_at as string | null;
  }, 10_000, "last_used_at");
  assert.ok(Date.parse(used) >= before - 1000);
});

t("POST /keys validates its body; configuration routes refuse unknown fields", async ({ stack }) => {
  const { api } = await stack.newProduct();
  for (const [body, path] of [
    [{ name: "" }, "/name"],
    [{ name: "x".repeat(101) }, "/name"],
    [{}, "/name"],
    [{ name: "k", scope: "owner" }, "/scope"],
    [{ name: "k", expires_at: "tomorrow" }, "/expires_at"],
    [{ name: "k", scopes: ["admin"] }, "/scopes"],
  ] as const) {
    const res = await api.post("/keys", body);
    assert.is(res.status, 422, JSON.stringify(body));
    assert.ok(res.body.issues.some((i: any) => i.path === path), `${JSON.stringify(body)}: ${res.body.detail}`);
  }
  const past = await api.post("/keys", { name: "k", expires_at: iso(Date.now() - 1000) });
  assert.is(past.status, 400);
  assert.match(past.body.detail, /future/);
  assert.is((await api.post("/keys", { name: "x".repeat(100) })).status, 201);
  assert.is((await api.delete("/keys/not-a-uuid")).status, 400);
});

t("a product holds at most 50 keys", async ({ stack }) => {
  const { api } = await stack.newProduct();
  for (let i = 1; i < 50; i++) assert.is((await api.post("/keys", { name: `k${i}`, scope: "ingest" })).status, 201);
  const over = await api.post("/keys", { name: "one too many" });
  assert.is(over.status, 400);
  assert.match(over.body.detail, /at most 50 keys/);
});

t("DELETE /keys/{id}: 204, then the key is refused (401); another product's key is 404", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const other = await stack.newProduct();
  const created = await api.post("/keys", { name: "leaked", scope: "ingest" });
  const leaked = api.withKey(created.body.key);
  assert.is((await leaked.get("/config/plans")).status, 200); // now in the gateway's cache

  assert.is((await other.api.delete(`/keys/${created.body.id}`)).status, 404);
  assert.is((await leaked.get("/config/plans")).status, 200, "another product's DELETE revoked nothing");
  assert.is((await api.delete(`/keys/${randomUUID()}`)).status, 404);

  const del = await api.delete(`/keys/${created.body.id}`);
  assert.is(del.status, 204);
  // The gateway trusts a verified key a few seconds at most (AUTH_CACHE_TTL_MS <= 4 s).
  const refused = await eventually(async () => {
    const res = await leaked.get("/config/plans");
    return res.status === 401 ? res : null;
  }, 10_000, "the revoked key refused");
  assert.is(refused.body.detail, "invalid API key");
  assert.is((await api.delete(`/keys/${created.body.id}`)).status, 404, "revoked twice");
  assert.not.ok((await api.get("/keys")).body.keys.some((k: any) => k.id === created.body.id));
});

t("a revoked key is refused by every gateway replica, each of which had it cached", async ({ stack }) => {
  const clients = connectClients({
    tenancy: stack.rpcUrl, plans: stack.rpcUrl, ingestion: stack.rpcUrl, analytics: stack.rpcUrl, webhooks: stack.rpcUrl,
  });
  // A second replica at the longest trust the configuration allows.
  const replica = await buildGateway({ clients, logger: createLogger("replica", "silent"), authCacheTtlMs: 4_000 });
  const address = await replica.listen({ port: 0, host: "127.0.0.1" });
  try {
    const { api } = await stack.newProduct();
    const created = await api.post("/keys", { name: "to revoke", scope: "ingest" });
    const onFirst = api.withKey(created.body.key);
    const onSecond = new Api(`${address}/api/v1`, created.body.key);
    assert.is((await onFirst.get("/config/plans")).status, 200);
    assert.is((await onSecond.get("/config/plans")).status, 200);
    assert.is((await api.delete(`/keys/${created.body.id}`)).status, 204);
    for (const replicaApi of [onFirst, onSecond]) {
      await eventually(async () => (await replicaApi.get("/config/plans")).status === 401, 15_000, "the revoked key refused");
    }
  } finally {
    await replica.close();
  }
});

t("a cached key used in the second half of its trust is verified again in the background: a revocation shows before the entry runs out", async ({ stack }) => {
  const clients = connectClients({
    tenancy: stack.rpcUrl, plans: stack.rpcUrl, ingestion: stack.rpcUrl, analytics: stack.rpcUrl, webhooks: stack.rpcUrl,
  });
  // The replica's cache runs on this clock: nothing expires unless the test moves it.
  let now = 10_000;
  const replica = await buildGateway({ clients, logger: createLogger("replica", "silent"), authCacheTtlMs: 4_000, authClock: () => now });
  const address = await replica.listen({ port: 0, host: "127.0.0.1" });
  try {
    const { api } = await stack.newProduct();
    const created = await api.post("/keys", { name: "in steady use", scope: "ingest" });
    const onReplica = new Api(`${address}/api/v1`, created.body.key);
    assert.is((await onReplica.get("/config/plans")).status, 200);
    assert.is((await api.delete(`/keys/${created.body.id}`)).status, 204);
    now = 11_500;
    assert.is((await onReplica.get("/config/plans")).status, 200, "first half: trusted from the cache, nothing asked");
    now = 12_500;
    assert.is((await onReplica.get("/config/plans")).status, 200, "second half: the cached answer stands while the key is verified again");
    // Still within the first verification's 4 s: only the background verification can refuse it.
    const refused = await eventually(async () => {
      const res = await onReplica.get("/config/plans");
      return res.status === 401 ? res : null;
    }, 15_000, "the background verification to learn of the revocation");
    assert.is(refused.body.detail, "invalid API key");
  } finally {
    await replica.close();
  }
});

t("revoking the product's last admin key is 409; with another admin key it is allowed", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const first = (await api.get("/keys")).body.keys[0];
  await api.post("/keys", { name: "ingest only", scope: "ingest" });
  const last = await api.delete(`/keys/${first.id}`);
  assert.is(last.status, 409);
  assert.match(last.body.detail, /last admin key/);

  const next = await api.post("/keys", { name: "rotated" });
  assert.is((await api.delete(`/keys/${first.id}`)).status, 204, "rotation: create, then revoke the old one");
  const rotated = api.withKey(next.body.key);
  assert.is((await rotated.delete(`/keys/${next.body.id}`)).status, 409);
  // An admin key that expires does not keep the product open: it does not count.
  const expiring = await rotated.post("/keys", { name: "short", expires_at: iso(Date.now() + 60_000) });
  assert.is(expiring.status, 201);
  assert.is((await rotated.delete(`/keys/${next.body.id}`)).status, 204, "another admin key exists until it expires");
});

t("an expired key answers 401 with a detail that says it expired", async ({ stack }) => {
  const { api } = await stack.newProduct();
  const created = await api.post("/keys", { name: "short-lived", expires_at: iso(Date.now() + 1500) });
  const key = api.withKey(created.body.key);
  assert.is((await key.get("/keys")).status, 200);
  const expired = await eventually(async () => {
    const res = await key.get("/keys");
    return res.status === 401 ? res : null;
  }, 15_000, "the key's expiry");
  assert.match(expired.body.detail, /expired/);
});

/** Every route of the OpenAPI document, with what each kind of key must get. */
interface Fixture {
  api: Api;
  ingest: Api;
  other: Api;
  userId: string;
  planId: string;
  endpointId: string;
  keyId: string;
  teamId: string;
}

/** Routes an ingest key may call: what a client process needs. */
const INGEST_ROUTES = new Set([
  "GET /api/v1/health",
  "GET /api/v1/config/plans",
  "GET /api/v1/config/changes",
  "GET /api/v1/users/{user_id}/session",
  "GET /api/v1/users/{user_id}/limits",
  "GET /api/v1/users/{user_id}/usage",
  "GET /api/v1/teams/{team_id}/limits",
  "GET /api/v1/teams/{team_id}/usage",
  "POST /api/v1/events/batch",
  "POST /api/v1/gate-events/batch",
  "POST /api/v1/events",
  "POST /api/v1/users/{user_id}/leases",
  "POST /api/v1/users/{user_id}/leases/{lease_id}/release",
  "POST /api/v1/users/{user_id}/portal-tokens",
  "DELETE /api/v1/users/{user_id}/portal-tokens",
]);

/** Routes that need no key at all. */
const PUBLIC_ROUTES = new Set([
  "GET /api/v1/health",
  "POST /api/v1/products",
  "GET /api/v1/portal/widget.js",
  "OPTIONS /api/v1/portal/widget.js",
  "OPTIONS /api/v1/portal/me",
]);

/** Routes that take a portal token and no API key (401 to any key). */
const PORTAL_TOKEN_ROUTES = new Set(["GET /api/v1/portal/me"]);

/** A valid request of each route naming a resource, for the other product's 404. */
function resourceRequests(f: Fixture): Record<string, { path: string; body?: unknown }> {
  const u = encodeURIComponent(f.userId);
  const team = encodeURIComponent(f.teamId);
  return {
    "GET /api/v1/teams/{team_id}": { path: `/teams/${team}` },
    "POST /api/v1/teams/{team_id}/subscription": {
      path: `/teams/${team}/subscription`,
      body: { plan_id: f.planId, period_start: "2026-01-01T00:00:00Z", period_end: "2026-02-01T00:00:00Z" },
    },
    "GET /api/v1/teams/{team_id}/members": { path: `/teams/${team}/members` },
    "GET /api/v1/teams/{team_id}/usage": { path: `/teams/${team}/usage` },
    "GET /api/v1/teams/{team_id}/limits": { path: `/teams/${team}/limits` },
    "PUT /api/v1/users/{user_id}/team": { path: `/users/${u}/team`, body: { team_id: f.teamId } },
    "PATCH /api/v1/config/plans/{plan_id}": { path: `/config/plans/${f.planId}`, body: { max_spend_per_period: 5 } },
    "POST /api/v1/users/{user_id}/subscription": {
      path: `/users/${u}/subscription`,
      body: { plan_id: f.planId, period_start: "2026-01-01T00:00:00Z", period_end: "2026-02-01T00:00:00Z" },
    },
    "GET /api/v1/users/{user_id}": { path: `/users/${u}` },
    "GET /api/v1/users/{user_id}/session": { path: `/users/${u}/session` },
    "GET /api/v1/users/{user_id}/limits": { path: `/users/${u}/limits` },
    "GET /api/v1/users/{user_id}/usage": { path: `/users/${u}/usage` },
    "GET /api/v1/users/{user_id}/gate-events": { path: `/users/${u}/gate-events` },
    "POST /api/v1/users/{user_id}/leases": { path: `/users/${u}/leases`, body: { holder: "h1", need: 0.01, want: 0.1 } },
    "POST /api/v1/users/{user_id}/leases/{lease_id}/release": { path: `/users/${u}/leases/h1/release`, body: { used: 0 } },
    "PATCH /api/v1/webhooks/endpoints/{id}": { path: `/webhooks/endpoints/${f.endpointId}`, body: { enabled: false } },
    "DELETE /api/v1/webhooks/endpoints/{id}": { path: `/webhooks/endpoints/${f.endpointId}` },
    "GET /api/v1/webhooks/endpoints/{id}/secret": { path: `/webhooks/endpoints/${f.endpointId}/secret` },
    "POST /api/v1/webhooks/endpoints/{id}/test": { path: `/webhooks/endpoints/${f.endpointId}/test` },
    "POST /api/v1/webhooks/endpoints/{id}/rotate-secret": { path: `/webhooks/endpoints/${f.endpointId}/rotate-secret` },
    "GET /api/v1/webhooks/endpoints/{id}/deliveries": { path: `/webhooks/endpoints/${f.endpointId}/deliveries` },
    "DELETE /api/v1/keys/{id}": { path: `/keys/${f.keyId}` },
    "POST /api/v1/users/{user_id}/portal-tokens": { path: `/users/${u}/portal-tokens`, body: { ttl_seconds: 60 } },
    "DELETE /api/v1/users/{user_id}/portal-tokens": { path: `/users/${u}/portal-tokens` },
    "POST /api/v1/users/{user_id}/credits": { path: `/users/${u}/credits`, body: { id: "g1", amount: 1 } },
    "GET /api/v1/users/{user_id}/credits": { path: `/users/${u}/credits` },
    "POST /api/v1/users/{user_id}/credits/{grant_id}/void": { path: `/users/${u}/credits/g1/void` },
    "GET /api/v1/users/{user_id}/credits/ledger": { path: `/users/${u}/credits/ledger` },
    "POST /api/v1/teams/{team_id}/credits": { path: `/teams/${team}/credits`, body: { id: "g1", amount: 1 } },
    "GET /api/v1/teams/{team_id}/credits": { path: `/teams/${team}/credits` },
    "POST /api/v1/teams/{team_id}/credits/{grant_id}/void": { path: `/teams/${team}/credits/g1/void` },
    "GET /api/v1/teams/{team_id}/credits/ledger": { path: `/teams/${team}/credits/ledger` },
  };
}

const concrete = (path: string) =>
  path.replace("/api/v1", "").replace("{user_id}", "u1").replace("{lease_id}", "h1").replace(/\{[a-z_]+\}/g, randomUUID());

t("every route: an ingest key gets 403 where it must; another product's key gets 404 for every resource", async ({ stack, rx }) => {
  const doc = (await stack.api.get("/openapi.json")).body;
  const routes = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
    Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
  );
  assert.ok(routes.length > 30, `only ${routes.length} routes in the document`);
  assert.equal(
    [doc.paths["/api/v1/keys"].post.operationId, doc.paths["/api/v1/keys"].get.operationId, doc.paths["/api/v1/keys/{id}"].delete.operationId],
    ["createKey", "listKeys", "revokeKey"],
  );

  const a = await stack.newProduct("Owner");
  const b = await stack.newProduct("Other");
  const ingestKey = (await a.api.post("/keys", { name: "client", scope: "ingest" })).body.key as string;
  const plan = await a.api.post("/config/plans", { plans: [{ name: "p", max_spend_per_period: 10 }] });
  await a.api.post("/users", { external_user_id: "alice" });
  await must(a.api.post("/teams", { external_team_id: "acme", name: "Acme" }), 201);
  const endpoint = await a.api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: ["usage.threshold.50"] });
  assert.is(endpoint.status, 201, JSON.stringify(endpoint.body));
  const extra = await a.api.post("/keys", { name: "extra" });
  const f: Fixture = {
    api: a.api,
    ingest: a.api.withKey(ingestKey),
    other: b.api,
    userId: "alice",
    planId: plan.body.id ?? plan.body.plans?.[0]?.id,
    endpointId: endpoint.body.id,
    keyId: extra.body.id,
    teamId: "acme",
  };
  assert.ok(f.planId, JSON.stringify(plan.body));

  for (const route of routes) {
    const [method, path] = route.split(" ") as [string, string];
    const res = await f.ingest.request(method, concrete(path), method === "GET" || method === "DELETE" ? {} : { body: {} });
    if (PORTAL_TOKEN_ROUTES.has(route)) {
      assert.is(res.status, 401, `${route} with an ingest key: ${res.status}`);
    } else if (INGEST_ROUTES.has(route) || PUBLIC_ROUTES.has(route)) {
      assert.ok(res.status !== 403 && res.status !== 401, `${route} with an ingest key: ${res.status} ${JSON.stringify(res.body)}`);
    } else {
      assert.is(res.status, 403, `${route} with an ingest key: ${res.status}`);
      assert.match(res.body.detail, /scope is "ingest"/);
    }
  }

  const requests = resourceRequests(f);
  const withResource = routes.filter((r) => /\{[a-z_]+\}/.test(r));
  assert.equal(withResource.filter((r) => !requests[r]), [], "routes naming a resource that this table misses");
  for (const route of withResource) {
    const [method] = route.split(" ") as [string];
    const { path, body } = requests[route]!;
    const res = await f.other.request(method, path, body === undefined ? {} : { body });
    assert.is(res.status, 404, `${route} with another product's key: ${res.status} ${JSON.stringify(res.body)}`);
  }
  // The owner's resources are untouched and the owner reaches them.
  const own = await f.api.get(`/webhooks/endpoints/${f.endpointId}/secret`);
  assert.is(own.status, 200, JSON.stringify(own.body));
  assert.ok((await f.api.get("/keys")).body.keys.some((k: any) => k.id === f.keyId));
});

t.run();
