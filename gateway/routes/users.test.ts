import { suite } from "uvu";
import * as assert from "uvu/assert";
import { randomUUID } from "node:crypto";
import type { Api } from "../../test/support/http.ts";
import { startTestStack, type TestStack } from "../../test/support/stack.ts";

interface Ctx {
  stack: TestStack;
  a: Api;
  b: Api;
  capped: { id: string; name: string };
  unlimited: { id: string; name: string };
  foreign: { id: string };
}

const t = suite<Ctx>("user routes over HTTP");

t.before(async (ctx) => {
  ctx.stack = await startTestStack();
  ctx.a = (await ctx.stack.newProduct("Users A")).api;
  ctx.b = (await ctx.stack.newProduct("Users B")).api;
  const plans = await ctx.a.post("/config/plans", {
    plans: [{ name: "capped", max_spend_per_period: 20 }, { name: "unlimited" }],
  });
  [ctx.capped, ctx.unlimited] = plans.body.plans;
  ctx.foreign = (await ctx.b.post("/config/plans", { plans: [{ name: "foreign" }] })).body.plans[0];
});

t.after(async (ctx) => {
  await ctx.stack.close();
});

const USER_KEYS = ["billing_subscription_id", "created_at", "external_user_id", "id", "name", "plan_name", "team_id", "updated_at"];
const uid = (base = "user") => `${base}-${randomUUID().slice(0, 8)}`;
const sub = (id: string) => `/users/${encodeURIComponent(id)}/subscription`;
const JAN = { period_start: "2026-01-01T00:00:00.000Z", period_end: "2026-02-01T00:00:00.000Z" };

t("POST /users creates a user with plan_name null (201)", async ({ a }) => {
  const id = uid();
  const res = await a.post("/users", { external_user_id: id, name: "Ann" });
  assert.is(res.status, 201, JSON.stringify(res.body));
  assert.equal(Object.keys(res.body).sort(), USER_KEYS);
  assert.is(res.body.external_user_id, id);
  assert.is(res.body.name, "Ann");
  assert.is(res.body.plan_name, null);
  assert.is(res.body.billing_subscription_id, null);
  assert.match(res.body.id, /^[0-9a-f-]{36}$/);
  const anonymous = await a.post("/users", { external_user_id: uid() });
  assert.is(anonymous.status, 201);
  assert.is(anonymous.body.name, null);
  assert.is((await a.post("/users", { external_user_id: uid(), name: null })).status, 201);
});

t("POST /users answers 409 for a taken external_user_id, which stays free in other products", async ({ a, b }) => {
  const id = uid();
  assert.is((await a.post("/users", { external_user_id: id })).status, 201);
  const again = await a.post("/users", { external_user_id: id, name: "other" });
  assert.is(again.status, 409);
  assert.match(again.body.detail, id);
  assert.is((await b.post("/users", { external_user_id: id })).status, 201);
});

t("many parallel sign-ups of one user yield one user and 409 for the rest", async ({ a }) => {
  const id = uid("race");
  const results = await Promise.all(Array.from({ length: 16 }, () => a.post("/users", { external_user_id: id })));
  assert.is(results.filter((r) => r.status === 201).length, 1);
  assert.is(results.filter((r) => r.status === 409).length, 15);
});

t("POST /users validates its body (422)", async ({ a }) => {
  for (const body of [
    {},
    { external_user_id: "" },
    { external_user_id: "x".repeat(256) },
    { external_user_id: "😀".repeat(256) },
    { external_user_id: 42 },
    { external_user_id: uid(), name: "n".repeat(256) },
    { external_user_id: uid(), plan: "free" },
  ]) {
    const res = await a.post("/users", body);
    assert.is(res.status, 422, `${JSON.stringify(body)} -> ${res.status}`);
    assert.ok(Array.isArray(res.body.issues));
  }
  assert.is((await a.post("/users", { external_user_id: "x".repeat(255) })).status, 201);
  // 255 characters whatever they are (an emoji is two UTF-16 units): the gateway and the service count alike.
  const wide = await a.post("/users", { external_user_id: "😀".repeat(255), name: "名".repeat(255) });
  assert.is(wide.status, 201, JSON.stringify(wide.body));
  assert.is((await a.get(`/users/${encodeURIComponent("😀".repeat(255))}`)).body.external_user_id, "😀".repeat(255));
});

t("subscribes a user; plan_name and billing_subscription_id are set (200)", async ({ a, capped, unlimited }) => {
  const id = uid();
  await a.post("/users", { external_user_id: id });
  const res = await a.post(sub(id), { plan_id: capped.id, billing_subscription_id: "sub_1", ...JAN });
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal(Object.keys(res.body).sort(), USER_KEYS);
  assert.is(res.body.plan_name, "capped");
  assert.is(res.body.billing_subscription_id, "sub_1");
  const moved = await a.post(sub(id), { plan_id: unlimited.id });
  assert.is(moved.status, 200);
  assert.is(moved.body.plan_name, "unlimited");
  assert.is(moved.body.billing_subscription_id, null);
  assert.is(moved.body.id, res.body.id);
});

t("unlimited plans take dates optionally; capped plans require both", async ({ a, capped, unlimited }) => {
  const id = uid();
  await a.post("/users", { external_user_id: id });
  assert.is((await a.post(sub(id), { plan_id: unlimited.id, ...JAN })).status, 200);
  assert.is((await a.post(sub(id), { plan_id: unlimited.id, period_start: null, period_end: null })).status, 200);
  for (const body of [
    { plan_id: capped.id },
    { plan_id: capped.id, period_start: JAN.period_start },
    { plan_id: capped.id, period_end: JAN.period_end },
    { plan_id: capped.id, period_start: null, period_end: null },
    { plan_id: capped.id, period_start: JAN.period_end, period_end: JAN.period_start },
    { plan_id: capped.id, period_start: JAN.period_start, period_end: JAN.period_start },
    { plan_id: unlimited.id, period_start: JAN.period_end, period_end: JAN.period_start },
  ]) {
    const res = await a.post(sub(id), body);
    assert.is(res.status, 400, `${JSON.stringify(body)} -> ${res.status}`);
    assert.match(res.body.detail, /period/);
  }
  const stillUnlimited = await a.post(sub(id), { plan_id: unlimited.id });
  assert.is(stillUnlimited.body.plan_name, "unlimited");
});

t("subscription 404s: unknown user, unknown plan, another product's plan or user", async ({ a, b, capped, foreign }) => {
  const id = uid();
  await a.post("/users", { external_user_id: id });
  const cases: [Api, string, unknown][] = [
    [a, sub(uid("ghost")), { plan_id: capped.id, ...JAN }],
    [a, sub(id), { plan_id: randomUUID(), ...JAN }],
    [a, sub(id), { plan_id: foreign.id }],
    [b, sub(id), { plan_id: foreign.id }],
  ];
  for (const [api, path, body] of cases) {
    const res = await api.post(path, body);
    assert.is(res.status, 404, `${path} ${JSON.stringify(body)} -> ${res.status}`);
    assert.type(res.body.detail, "string");
  }
});

t("subscription body: plan names, unknown fields and bad dates are 422", async ({ a, capped }) => {
  const id = uid();
  await a.post("/users", { external_user_id: id });
  for (const [body, path] of [
    [{ plan_id: "capped", ...JAN }, "/plan_id"],
    [{ ...JAN }, "/plan_id"],
    [{ plan_id: capped.id, ...JAN, reset: true }, "/reset"],
    [{ plan_id: capped.id, period_start: "January", period_end: JAN.period_end }, "/period_start"],
  ] as const) {
    const res = await a.post(sub(id), body);
    assert.is(res.status, 422, `${JSON.stringify(body)} -> ${res.status}`);
    assert.ok(res.body.issues.some((i: { path: string }) => i.path === path), JSON.stringify(res.body.issues));
  }
  // A plan's name where its id goes is told where the id comes from.
  const named = await a.post(sub(id), { plan_id: "capped", ...JAN });
  assert.match(named.body.issues.find((i: { path: string }) => i.path === "/plan_id").message, /a plan's id .*GET \/api\/v1\/config\/plans.*not its name/);
});

t("user_id in the path is opaque: slashes, spaces, unicode, reserved characters and 255 characters", async ({ a, unlimited }) => {
  const ids = [
    "org/team/user 1",
    "ünïcødé-用户-🙂",
    "a?b#c&d=e%f+g",
    "a..b",
    "y".repeat(255),
    "é".repeat(255),
    "/".repeat(255),
  ];
  for (const id of ids) {
    const created = await a.post("/users", { external_user_id: id });
    assert.is(created.status, 201, `${id}: ${JSON.stringify(created.body)}`);
    const res = await a.post(sub(id), { plan_id: unlimited.id });
    assert.is(res.status, 200, `${id}: ${res.status} ${JSON.stringify(res.body)}`);
    assert.is(res.body.external_user_id, id);
    assert.is(res.body.plan_name, "unlimited");
  }
  // A plan id in capitals or as a URN names the same plan.
  const spelledId = uid();
  await a.post("/users", { external_user_id: spelledId });
  const spelled = await a.post(sub(spelledId), { plan_id: `urn:uuid:${unlimited.id.toUpperCase()}` });
  assert.is(spelled.status, 200, JSON.stringify(spelled.body));
  // Paths that are not a subscription, or ids no user can have, are not found.
  assert.is((await a.post(`/users/${"y".repeat(255)}/other`, { plan_id: unlimited.id })).status, 404);
  assert.is((await a.post(sub("z".repeat(256)), { plan_id: unlimited.id })).status, 404);
  // So are the user's reads under such an id: no user has it (404), not a malformed request (400).
  const long = "z".repeat(256);
  for (const path of ["session", "usage", "limits", "gate-events", "credits"]) {
    const res = await a.get(`/users/${long}/${path}`);
    assert.is(res.status, 404, `${path}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  // A different id that only differs in encoding is a different user.
  assert.is((await a.post(sub("org%2Fteam%2Fuser 1"), { plan_id: unlimited.id })).status, 404);
});

t("GET /users/{user_id} answers the user as the writes did; 404 for unknown ids and other products' users", async ({ a, b, stack, capped }) => {
  const id = `${uid()}/ünï code?&`;
  const created = await a.post("/users", { external_user_id: id, name: "Ada" });
  const before = await a.get(`/users/${encodeURIComponent(id)}`);
  assert.is(before.status, 200, JSON.stringify(before.body));
  assert.equal(before.body, created.body);
  const subscribed = await a.post(sub(id), { plan_id: capped.id, billing_subscription_id: "sub_9", ...JAN });
  const after = await a.get(`/users/${encodeURIComponent(id)}`);
  assert.equal(after.body, subscribed.body);
  assert.is(after.body.plan_name, "capped");
  assert.is((await a.get(`/users/${encodeURIComponent(uid())}`)).status, 404);
  assert.is((await b.get(`/users/${encodeURIComponent(id)}`)).status, 404);
  assert.is((await stack.api.get(`/users/${encodeURIComponent(id)}`)).status, 401);
});

t("subscription routes need a valid key (401)", async ({ stack, unlimited }) => {
  assert.is((await stack.api.post("/users", { external_user_id: "x" })).status, 401);
  assert.is((await stack.api.post(sub("x"), { plan_id: unlimited.id })).status, 401);
});

// GET /users: the listing. Each test uses a product of its own, so it knows every user there.

const LIST_ROW_KEYS = [...USER_KEYS, "period_end", "period_spend_usd", "period_start", "period_tokens"].sort();
/** MongoDB's order of strings: UTF-8 bytes. */
const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const list = (api: Api, query: Record<string, string | number> = {}) =>
  api.get(`/users?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))}`);

async function createUsers(api: Api, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    const res = await api.post("/users", { external_user_id: id });
    assert.is(res.status, 201, `${id}: ${JSON.stringify(res.body)}`);
  }
}

/** Every user a listing gives, page by page; `between` runs after each page. */
async function listAll(api: Api, query: Record<string, string | number>, between?: (page: number) => Promise<void>): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const res = await list(api, cursor ? { ...query, cursor } : query);
    assert.is(res.status, 200, JSON.stringify(res.body));
    ids.push(...res.body.users.map((u: { external_user_id: string }) => u.external_user_id));
    cursor = res.body.next_cursor ?? undefined;
    pages++;
    await between?.(pages);
  } while (cursor);
  return { ids, pages };
}

t("GET /users lists the product's users in external_user_id order, each with the user fields and the period's spend", async ({ stack }) => {
  const { api } = await stack.newProduct("Listing order");
  const ids = ["bob", "alice", "Zed", "émile", "carol", "a"];
  await createUsers(api, ids);
  const res = await list(api);
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal(Object.keys(res.body).sort(), ["next_cursor", "users"]);
  assert.is(res.body.next_cursor, null);
  assert.equal(res.body.users.map((u: { external_user_id: string }) => u.external_user_id), [...ids].sort(byteOrder));
  const row = res.body.users[0];
  assert.equal(Object.keys(row).sort(), LIST_ROW_KEYS);
  const one = await api.get(`/users/${encodeURIComponent(row.external_user_id)}`);
  for (const k of USER_KEYS) assert.equal(row[k], one.body[k], k);
  assert.is(row.period_spend_usd, 0);
  assert.is(row.period_tokens, 0);
});

t("GET /users?prefix matches the start of external_user_id literally, case-sensitively, beyond U+FFFF", async ({ stack }) => {
  const { api } = await stack.newProduct("Listing prefix");
  const ids = ["team-a", "team-b", "team-", "teamX", "Team-c", "a.b", "axb", "a*1", "a+b", "(x)", "[x", "z\uffff", "z\uffff1", "z\u{1F600}", "z", "zz", "t:1"];
  await createUsers(api, ids);
  const listed = async (prefix: string) => (await listAll(api, { prefix, limit: 2 })).ids;
  const expect = (prefix: string) => ids.filter((id) => id.startsWith(prefix)).sort(byteOrder);
  for (const prefix of ["team-", "team", "Team", "a.", "a*", "a+", "(", "[", "z", "z\uffff", "z\u{1F600}", "t:", "nobody", ""]) {
    assert.equal(await listed(prefix), expect(prefix), `prefix ${JSON.stringify(prefix)}`);
  }
  assert.equal((await listAll(api, {})).ids, [...ids].sort(byteOrder));
  assert.is((await list(api, { prefix: "p".repeat(256) })).status, 400);
});

t("GET /users?plan lists the users whose current subscription is on that plan", async ({ stack }) => {
  const { api } = await stack.newProduct("Listing plans");
  const [gold, free] = (await api.post("/config/plans", { plans: [{ name: "gold" }, { name: "free plan" }] })).body.plans;
  const ids = Array.from({ length: 12 }, (_, i) => `u${String(i).padStart(2, "0")}`);
  await createUsers(api, ids);
  // u00-u05 on gold, u06-u09 on free, u10-u11 on none; then u01 moves to free, u06 to gold, and
  // u02 leaves gold and comes back.
  for (const id of ids.slice(0, 6)) assert.is((await api.post(sub(id), { plan_id: gold.id })).status, 200);
  for (const id of ids.slice(6, 10)) assert.is((await api.post(sub(id), { plan_id: free.id })).status, 200);
  assert.is((await api.post(sub("u01"), { plan_id: free.id })).status, 200);
  assert.is((await api.post(sub("u06"), { plan_id: gold.id })).status, 200);
  assert.is((await api.post(sub("u02"), { plan_id: free.id })).status, 200);
  assert.is((await api.post(sub("u02"), { plan_id: gold.id })).status, 200);
  const onGold = ["u00", "u02", "u03", "u04", "u05", "u06"];
  const onFree = ["u01", "u07", "u08", "u09"];
  for (const limit of [1, 2, 50]) {
    assert.equal((await listAll(api, { plan: "gold", limit })).ids, onGold, `limit ${limit}`);
    assert.equal((await listAll(api, { plan: "free plan", limit })).ids, onFree, `limit ${limit}`);
  }
  const page = await list(api, { plan: "gold" });
  assert.ok(page.body.users.every((u: { plan_name: string }) => u.plan_name === "gold"));
  assert.equal((await listAll(api, { plan: "gold", prefix: "u0" })).ids, onGold);
  assert.equal((await listAll(api, { plan: "free plan", prefix: "u0" })).ids, ["u01", "u07", "u08", "u09"]);
  assert.equal((await listAll(api, { plan: "free plan", prefix: "u1" })).ids, []);
  const unknown = await list(api, { plan: "platinum" });
  assert.equal(unknown.body, { users: [], next_cursor: null });
  // A renamed plan lists its users under its new name.
  assert.is((await api.patch(`/config/plans/${gold.id}`, { name: "gold 2" })).status, 200);
  assert.equal((await listAll(api, { plan: "gold 2" })).ids, onGold);
  assert.equal((await listAll(api, { plan: "gold" })).ids, []);
});

t("paging through GET /users gives every user once, in order, while users are added between pages", async ({ stack }) => {
  const { api } = await stack.newProduct("Listing pages");
  const first = Array.from({ length: 40 }, (_, i) => `m${String(i * 10).padStart(4, "0")}`);
  await createUsers(api, first);
  const added: string[] = [];
  const { ids, pages } = await listAll(api, { limit: 7 }, async (page) => {
    // Each round adds one user before the listing's position and one after it.
    const before = `m${String(page * 10 - 5).padStart(4, "0")}`;
    const after = `m${String(page * 70 + 5).padStart(4, "0")}`;
    await createUsers(api, [before, after]);
    added.push(before, after);
  });
  assert.ok(pages >= 6, `pages ${pages}`);
  assert.is(new Set(ids).size, ids.length, "no user twice");
  assert.equal([...ids].sort(byteOrder), ids, "in order");
  for (const id of first) assert.ok(ids.includes(id), `${id} listed`);
  for (const id of ids) assert.ok(first.includes(id) || added.includes(id), `${id} exists`);
  // Users added ahead of the listing's position are listed too.
  assert.ok(ids.includes("m0075"), "a user added ahead of the position");
});

t("GET /users pages: default 50, limit 1-200, a malformed cursor is 400", async ({ stack }) => {
  const { api } = await stack.newProduct("Listing bounds");
  await createUsers(api, Array.from({ length: 51 }, (_, i) => `b${String(i).padStart(2, "0")}`));
  const page = await list(api);
  assert.is(page.body.users.length, 50);
  assert.type(page.body.next_cursor, "string");
  const rest = await list(api, { cursor: page.body.next_cursor });
  assert.equal(rest.body.users.map((u: { external_user_id: string }) => u.external_user_id), ["b50"]);
  assert.is(rest.body.next_cursor, null);
  assert.is((await list(api, { limit: 200 })).body.users.length, 51);
  assert.is((await list(api, { limit: 1 })).body.users.length, 1);
  for (const query of [{ limit: 0 }, { limit: 201 }, { limit: -1 }, { limit: "ten" }, { limit: 1.5 }, { plan: "" }, { cursor: "" }] as Record<string, string | number>[]) {
    const res = await list(api, query);
    assert.is(res.status, 400, `${JSON.stringify(query)} -> ${res.status}`);
    assert.type(res.body.detail, "string");
    assert.ok(Array.isArray(res.body.issues), JSON.stringify(res.body));
  }
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
  for (const cursor of ["not a cursor", "%%%", b64(["x", "b01"]), b64(["u", 1]), b64(["u", ""]), b64({ u: "b01" }), b64(["u", "x".repeat(256)])]) {
    const res = await list(api, { cursor });
    assert.is(res.status, 400, `${cursor} -> ${res.status}`);
    assert.match(res.body.detail, /cursor/);
  }
});

t("GET /users never lists another product's users, whatever the prefix, plan or cursor", async ({ stack }) => {
  const a = (await stack.newProduct("Listing A")).api;
  const b = (await stack.newProduct("Listing B")).api;
  await createUsers(a, ["shared-1", "own-a"]);
  await createUsers(b, ["shared-1", "shared-2", "own-b"]);
  const [planA] = (await a.post("/config/plans", { plans: [{ name: "same" }] })).body.plans;
  const [planB] = (await b.post("/config/plans", { plans: [{ name: "same" }] })).body.plans;
  await a.post(sub("shared-1"), { plan_id: planA.id });
  await b.post(sub("shared-2"), { plan_id: planB.id });
  await b.post(sub("own-b"), { plan_id: planB.id });
  assert.equal((await listAll(a, { limit: 1 })).ids, ["own-a", "shared-1"]);
  assert.equal((await listAll(a, { prefix: "shared" })).ids, ["shared-1"]);
  assert.equal((await listAll(a, { plan: "same" })).ids, ["shared-1"]);
  assert.equal((await listAll(b, { plan: "same" })).ids, ["own-b", "shared-2"]);
  const bPage = await list(b, { limit: 1 });
  assert.equal((await listAll(a, { cursor: bPage.body.next_cursor })).ids, ["shared-1"]);
  const idsA = (await list(a)).body.users.map((u: { id: string }) => u.id);
  const idsB = (await list(b)).body.users.map((u: { id: string }) => u.id);
  assert.ok(idsA.every((id: string) => !idsB.includes(id)));
  assert.is((await a.withKey(undefined).get("/users")).status, 401);
  // A client process's key (scope ingest) reads no listing of users.
  const ingest = await a.post("/keys", { name: "client", scope: "ingest" });
  assert.is(ingest.status, 201);
  const refused = await a.withKey(ingest.body.key).get("/users");
  assert.is(refused.status, 403);
  assert.match(refused.body.detail, /admin/);
});

t("GET /users shows each user's spend of the current period right after its events are ingested", async ({ stack }) => {
  const { api } = await stack.newProduct("Listing spend");
  const [plan] = (await api.post("/config/plans", { plans: [{ name: "metered", max_spend_per_period: 50 }] })).body.plans;
  await createUsers(api, ["s-dated", "s-plain", "s-none"]);
  const now = new Date();
  const start = new Date(now.getTime() - 3 * 86_400_000);
  const end = new Date(now.getTime() + 4 * 86_400_000);
  assert.is((await api.post(sub("s-dated"), { plan_id: plan.id, period_start: start.toISOString(), period_end: end.toISOString() })).status, 200);
  const event = (user: string, cost: number, tokens: number, at = now) => ({
    id: randomUUID(), user_id: user, timestamp: at.toISOString(), model: "gpt-4.1",
    input_tokens: tokens, output_tokens: 0, total_tokens: tokens, cost_tokens: cost, cost_total: cost,
  });
  const before = new Date(start.getTime() - 86_400_000); // the period before: not this period's spend
  const batch = [event("s-dated", 1.25, 100), event("s-dated", 0.5, 20), event("s-dated", 9, 900, before), event("s-none", 0.75, 30)];
  assert.equal((await api.post("/events/batch", batch)).body, { accepted: 4, duplicates: 0 });
  const rows = new Map((await list(api)).body.users.map((u: { external_user_id: string }) => [u.external_user_id, u]));
  const dated = rows.get("s-dated") as Record<string, unknown>;
  assert.is(dated.period_spend_usd, 1.75);
  assert.is(dated.period_tokens, 120);
  assert.is(dated.period_start, start.toISOString());
  assert.is(dated.period_end, end.toISOString());
  const usage = await api.get("/users/s-dated/usage");
  assert.is(usage.body.total_cost, dated.period_spend_usd);
  const none = rows.get("s-none") as Record<string, unknown>;
  assert.is(none.period_spend_usd, 0.75);
  const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  assert.is(none.period_start, month.toISOString(), "a user without a plan: the calendar month");
  assert.is((rows.get("s-plain") as Record<string, unknown>).period_spend_usd, 0);
  // The plan filter's rows carry the spend too.
  assert.is((await list(api, { plan: "metered" })).body.users[0].period_spend_usd, 1.75);
});

t.run();
