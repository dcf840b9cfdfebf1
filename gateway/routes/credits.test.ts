import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MongoClient } from "mongodb";
import type { Api } from "../../test/support/http.ts";
import { creditsOf, ledgerOf, sendEvents, usageJson, userOnPlan } from "../../test/support/rest.ts";
import { eventually } from "../../test/support/eventually.ts";
import { withTestStack, type TestStack } from "../../test/support/stack.ts";

/**
 * Prepaid credits over HTTP (BUDGETS.md §3): grants, balance, draws in order, the cap the
 * session view and GET limits show, expiry on time, idempotent grants, void, the ledger, and
 * draws exactly once under a replayed batch.
 */
const t = suite<{ stack: TestStack; mongo: MongoClient; api: Api }>("credits over HTTP");
withTestStack(t, { services: { ingestion: { relayIntervalMs: 100, idlePollMaxMs: 1_000 } } });
t.before(async (ctx) => {
  ({ api: ctx.api } = await ctx.stack.newProduct("Credits"));
});

const near = (a: number, b: number, what: string) => assert.ok(Math.abs(a - b) < 1e-9, `${what}: ${a} != ${b}`);

const PREPAID = { max_spend_per_period: 0, credits_enabled: true };
/** The calendar month of the run, the period users are subscribed for. */
const today = new Date();
const THIS_MONTH = {
  period_start: new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), 1)).toISOString(),
  period_end: new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth() + 1, 1)).toISOString(),
};

const credits = (api: Api, user: string) => creditsOf(api, `/users/${user}`);
const ledger = (api: Api, user: string) => ledgerOf(api, `/users/${user}`, 2);

const totalSpend = (view: { limits: { reason: string }[] }) => view.limits.find((d) => d.reason === "total_spend") as any;

t("plans take credits_enabled and credits_low_at; a plan without them reads as before", async ({ api }) => {
  const res = await api.post("/config/plans", { plans: [{ name: `c-${randomUUID()}`, credits_enabled: true, credits_low_at: 2.5 }, { name: `n-${randomUUID()}` }] });
  assert.is(res.status, 201, JSON.stringify(res.body));
  assert.is(res.body.plans[0].credits_enabled, true);
  assert.is(res.body.plans[0].credits_low_at, 2.5);
  assert.is(res.body.plans[1].credits_enabled, false);
  assert.is(res.body.plans[1].credits_low_at, null);
  const patched = await api.patch(`/config/plans/${res.body.plans[0].id}`, { credits_low_at: null });
  assert.is(patched.status, 200, JSON.stringify(patched.body));
  assert.is(patched.body.credits_low_at, null);
  assert.is(patched.body.credits_enabled, true);
  assert.is((await api.post("/config/plans", { plans: [{ name: `x-${randomUUID()}`, credits_low_at: -1 }] })).status, 422);
});

t("a pure-prepaid user with a $1.00 grant: usage draws it, the cap is reached, a top-up raises it", async ({ api }) => {
  const user = await userOnPlan(api, { ...PREPAID, credits_low_at: 0.25 }, THIS_MONTH);
  const grant = await api.post(`/users/${user}/credits`, { id: "pay_1", amount: 1 });
  assert.is(grant.status, 201, JSON.stringify(grant.body));
  assert.equal(
    { id: grant.body.id, amount: grant.body.amount, remaining: grant.body.remaining, kind: grant.body.kind, priority: grant.body.priority, status: grant.body.status },
    { id: "pay_1", amount: 1, remaining: 1, kind: "paid", priority: 50, status: "active" },
  );
  let session = (await api.get(`/users/${user}/session`)).body;
  assert.is(session.plan_config.credits_enabled, true);
  assert.is(session.plan_config.credits_low_at, 0.25);
  near(session.credits.balance, 1, "balance in the session view");
  near(totalSpend(session).max, 1, "cap = allowance 0 + balance 1");
  assert.equal(totalSpend(session).credits, { balance: 1, low_at: 0.25 });

  await sendEvents(api, [usageJson(user, 0.4), usageJson(user, 0.6)]);
  const after = await eventually(async () => {
    const c = await credits(api, user);
    return Math.abs(c.balance) < 1e-9 && c;
  }, 30_000, "the grant drawn");
  assert.is(after.grants[0].status, "depleted");
  near(after.overdraft, 0, "no overdraft");
  session = (await api.get(`/users/${user}/session`)).body;
  near(totalSpend(session).used, 1, "used");
  near(totalSpend(session).max, 1, "cap: drawn 1 + balance 0");
  assert.ok(totalSpend(session).used >= totalSpend(session).max, "the cap is reached");
  const limits = (await api.get(`/users/${user}/limits`)).body;
  near(totalSpend(limits).max, 1, "GET limits shows the same cap");
  assert.equal(totalSpend(limits).credits, { balance: 0, low_at: 0.25 });

  const topUp = await api.post(`/users/${user}/credits`, { id: "pay_2", amount: 2 });
  assert.is(topUp.status, 201);
  session = (await api.get(`/users/${user}/session`)).body;
  near(totalSpend(session).max, 3, "a top-up raises the cap");
  near(session.credits.balance, 2, "balance after the top-up");

  const entries = await ledger(api, user);
  const sum = (type: string) => entries.filter((e) => e.type === type).reduce((s, e) => s + e.amount, 0);
  near(sum("usage") + sum("overdraft"), -1, "the ledger's usage equals the usage beyond the allowance");
  near(sum("grant"), 3, "grants in the ledger");
});

t("grants are drawn by priority, then expiry: promo at 10 before paid at 50; overdraft paid by the next grant", async ({ api }) => {
  const user = await userOnPlan(api, PREPAID, THIS_MONTH);
  assert.is((await api.post(`/users/${user}/credits`, { id: "paid", amount: 1, priority: 50 })).status, 201);
  assert.is((await api.post(`/users/${user}/credits`, { id: "promo", amount: 0.5, kind: "promotional", priority: 10 })).status, 201);
  await sendEvents(api, [usageJson(user, 0.7)]);
  const c = await eventually(async () => {
    const c = await credits(api, user);
    return Math.abs(c.balance - 0.8) < 1e-9 && c;
  }, 30_000, "0.70 drawn");
  const byId = Object.fromEntries(c.grants.map((g: any) => [g.id, g]));
  near(byId.promo.remaining, 0, "promo drawn first");
  assert.is(byId.promo.status, "depleted");
  near(byId.paid.remaining, 0.8, "paid drawn for the rest");
  // Past the balance: an overdraft, shown as a negative balance and paid first by the next grant.
  await sendEvents(api, [usageJson(user, 1)]);
  const over = await eventually(async () => {
    const c = await credits(api, user);
    return Math.abs(c.overdraft - 0.2) < 1e-9 && c;
  }, 30_000, "an overdraft of 0.20");
  near(over.balance, -0.2, "negative balance");
  const next = await api.post(`/users/${user}/credits`, { id: "next", amount: 1 });
  assert.is(next.status, 201);
  near(next.body.remaining, 0.8, "the new grant paid the overdraft first");
  const now = await credits(api, user);
  near(now.balance, 0.8, "balance");
  near(now.overdraft, 0, "overdraft paid");
});

t("a grant spent whole on an overdraft is answered depleted; with credits off a grant pays no overdraft", async ({ api }) => {
  const user = await userOnPlan(api, PREPAID, THIS_MONTH);
  await sendEvents(api, [usageJson(user, 1.5)]);
  await eventually(async () => Math.abs((await credits(api, user)).overdraft - 1.5) < 1e-9, 30_000, "an overdraft of 1.50");
  const spent = await api.post(`/users/${user}/credits`, { id: "small", amount: 1 });
  assert.is(spent.status, 201, JSON.stringify(spent.body));
  assert.is(spent.body.status, "depleted", JSON.stringify(spent.body));
  near(spent.body.remaining, 0, "all of it paid the overdraft");
  near((await credits(api, user)).overdraft, 0.5, "the rest still owed");
  // Moved to a plan with credits off: grants are kept, never drawn (BUDGETS.md §3), so the overdraft waits.
  const off = await api.post("/config/plans", { plans: [{ name: `off-${randomUUID()}`, max_spend_per_period: 0 }] });
  assert.is((await api.post(`/users/${user}/subscription`, { plan_id: off.body.plans[0].id, ...THIS_MONTH })).status, 200);
  const kept = await api.post(`/users/${user}/credits`, { id: "kept", amount: 2 });
  assert.is(kept.status, 201, JSON.stringify(kept.body));
  assert.is(kept.body.status, "active");
  near(kept.body.remaining, 2, "not drawn");
  near((await credits(api, user)).overdraft, 0.5, "still owed");
});

t("ledger pages: an entry added between two pages is not given twice, and the pages of a grant id of 128 emoji go on", async ({ api }) => {
  const user = await userOnPlan(api, PREPAID, THIS_MONTH);
  const long = "😀".repeat(128);
  for (const id of ["g1", "g2", long]) assert.is((await api.post(`/users/${user}/credits`, { id, amount: 1 })).status, 201);
  const page = async (cursor?: string) =>
    (await api.get(`/users/${user}/credits/ledger?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)).body as { entries: { grant_id: string }[]; next_cursor: string | null };
  const first = await page();
  assert.equal(first.entries.map((e) => e.grant_id), [long]);
  assert.is((await api.post(`/users/${user}/credits`, { id: "g4", amount: 1 })).status, 201);
  const second = await page(first.next_cursor!);
  assert.equal(second.entries.map((e) => e.grant_id), ["g2"]);
  const third = await page(second.next_cursor!);
  assert.equal(third.entries.map((e) => e.grant_id), ["g1"]);
  assert.equal((await ledger(api, user)).map((e: any) => e.grant_id), ["g4", long, "g2", "g1"]);
});

t("the ledger lists an hour's usage where its balance was true: after a grant made before the hour's last draw, so the top entry's balance is the balance", async ({ api }) => {
  const user = await userOnPlan(api, PREPAID, THIS_MONTH);
  assert.is((await api.post(`/users/${user}/credits`, { id: "first", amount: 5 })).status, 201);
  await sendEvents(api, [usageJson(user, 1)]);
  await eventually(async () => Math.abs((await credits(api, user)).balance - 4) < 1e-9, 30_000, "1 drawn");
  assert.is((await api.post(`/users/${user}/credits`, { id: "second", amount: 5 })).status, 201);
  await sendEvents(api, [usageJson(user, 2)]);
  await eventually(async () => Math.abs((await credits(api, user)).balance - 7) < 1e-9, 30_000, "2 more drawn");
  const entries = await ledger(api, user);
  const top = entries[0]!;
  near(top.balance_after, 7, "the newest entry's balance is the balance");
  assert.is(top.type, "usage");
  const hour = new Date(top.at);
  assert.is(hour.getTime() % 3_600_000, 0, "a usage entry is answered with its hour");
  assert.equal(entries.filter((e) => e.type === "grant").map((e) => e.grant_id), ["second", "first"]);
});

t("a lease sees the period cap with credits: allowance + drawn + balance, nothing past it", async ({ api }) => {
  const user = await userOnPlan(api, PREPAID, THIS_MONTH);
  const lease = (holder: string, need: number, want: number) => api.post(`/users/${user}/leases`, { holder, need, want });
  const none = await lease("h0", 0.01, 1);
  assert.is(none.status, 200, JSON.stringify(none.body));
  near(none.body.lease.added, 0, "no balance: nothing to lease under a $0 allowance");
  assert.is((await api.post(`/users/${user}/credits`, { id: "five", amount: 5 })).status, 201);
  await sendEvents(api, [usageJson(user, 1)]);
  await eventually(async () => Math.abs((await credits(api, user)).balance - 4) < 1e-9, 30_000, "1.00 drawn");
  // Cap 0 + 1 drawn + 4 balance = 5, of which 1 is spent: 4 remain for leases, whoever asks.
  const granted: number[] = [];
  for (let i = 0; i < 12; i++) {
    const res = await lease(`h${i + 1}`, 0.01, 10);
    assert.is(res.status, 200, JSON.stringify(res.body));
    granted.push(res.body.lease.added);
  }
  const total = granted.reduce((s, g) => s + g, 0);
  assert.ok(total <= 4 + 1e-9, `leases hold ${total}, more than the 4.00 left`);
  assert.ok(total > 3, `leases hold ${total}: the balance counts into the cap`);
});

t("a re-sent grant id changes nothing (200), other fields are 409; validation; unknown user 404; void", async ({ api, stack }) => {
  const user = await userOnPlan(api, PREPAID, THIS_MONTH);
  const body = { id: "pay_x", amount: 5, description: "Top-up", metadata: { invoice: "in_1" } };
  assert.is((await api.post(`/users/${user}/credits`, body)).status, 201);
  const again = await api.post(`/users/${user}/credits`, body);
  assert.is(again.status, 200, JSON.stringify(again.body));
  assert.equal(again.body.metadata, { invoice: "in_1" });
  near((await credits(api, user)).balance, 5, "granted once");
  // The same grant with its defaults spelled out and its metadata's keys in another order: a repeat too.
  const spelled = await api.post(`/users/${user}/credits`, { ...body, kind: "paid", priority: 50, metadata: { invoice: "in_1" } });
  assert.is(spelled.status, 200, JSON.stringify(spelled.body));
  const second = await userOnPlan(api, PREPAID, THIS_MONTH);
  const plain = { id: "pay_y", amount: 1, kind: "paid", priority: 50, metadata: { a: 1, b: { c: 2, d: 3 } } };
  assert.is((await api.post(`/users/${second}/credits`, plain)).status, 201);
  const reordered = await api.post(`/users/${second}/credits`, { id: "pay_y", amount: 1, metadata: { b: { d: 3, c: 2 }, a: 1 } });
  assert.is(reordered.status, 200, JSON.stringify(reordered.body));
  near((await credits(api, second)).balance, 1, "granted once");
  near((await credits(api, user)).balance, 5, "granted once");
  const other = await api.post(`/users/${user}/credits`, { ...body, amount: 6 });
  assert.is(other.status, 409, JSON.stringify(other.body));
  assert.is((await api.post(`/users/${user}/credits`, { ...body, kind: "promotional" })).status, 409);
  for (const bad of [{ id: "a", amount: 0 }, { id: "a", amount: 1, priority: 101 }, { id: "a", amount: 1, kind: "gift" }, { id: "", amount: 1 }, { id: "a", amount: 1e10 }]) {
    assert.is((await api.post(`/users/${user}/credits`, bad)).status, 422, JSON.stringify(bad));
  }
  const backwards = await api.post(`/users/${user}/credits`, { id: "b", amount: 1, effective_at: "2030-01-02T00:00:00Z", expires_at: "2030-01-01T00:00:00Z" });
  assert.is(backwards.status, 400, JSON.stringify(backwards.body));
  // Expired before it is given (its effective_at further back): never drawable, refused, not kept.
  const past = await api.post(`/users/${user}/credits`, { id: "past", amount: 1, effective_at: "2025-01-01T00:00:00Z", expires_at: "2025-01-05T00:00:00Z" });
  assert.is(past.status, 400, JSON.stringify(past.body));
  assert.is((await credits(api, user)).grants.find((g: { id: string }) => g.id === "past"), undefined);
  // Below a nano-dollar: it would be stored as 0, a grant never drawn.
  const dust = await api.post(`/users/${user}/credits`, { id: "dust", amount: 1e-10 });
  assert.is(dust.status, 400, JSON.stringify(dust.body));
  // A description's 1,024 are characters, as the gateway counts them.
  const another = await userOnPlan(api, PREPAID, THIS_MONTH);
  assert.is((await api.post(`/users/${another}/credits`, { id: "emoji", amount: 1, description: "😀".repeat(1024) })).status, 201);
  assert.is((await api.post(`/users/nobody-${randomUUID()}/credits`, { id: "a", amount: 1 })).status, 404);
  assert.is((await api.post(`/users/${user}/credits/nope/void`)).status, 404);
  // Admin keys only.
  const key = await api.post("/keys", { name: "ingest", scope: "ingest" });
  const ingest = stack.api.withKey(key.body.key);
  assert.is((await ingest.get(`/users/${user}/credits`)).status, 403);

  const voided = await api.post(`/users/${user}/credits/pay_x/void`);
  assert.is(voided.status, 200, JSON.stringify(voided.body));
  assert.is(voided.body.status, "voided");
  near(voided.body.remaining, 0, "nothing left");
  const twice = await api.post(`/users/${user}/credits/pay_x/void`);
  assert.is(twice.status, 200);
  assert.is(twice.body.status, "voided");
  near((await credits(api, user)).balance, 0, "balance after the void");
  const entries = await ledger(api, user);
  assert.equal(entries.map((e) => [e.type, e.amount, e.grant_id]), [["void", -5, "pay_x"], ["grant", 5, "pay_x"]]);
});

t("a grant not yet effective is pending; the session view lists what expires", async ({ api }) => {
  const user = await userOnPlan(api, PREPAID, THIS_MONTH);
  const later = new Date(Date.now() + 3_600_000).toISOString();
  const soon = new Date(Date.now() + 3 * 3_600_000).toISOString();
  const g = await api.post(`/users/${user}/credits`, { id: "later", amount: 2, effective_at: later });
  assert.is(g.body.status, "pending");
  assert.is((await api.post(`/users/${user}/credits`, { id: "soon", amount: 1, expires_at: soon })).status, 201);
  const c = await credits(api, user);
  near(c.balance, 1, "balance");
  near(c.pending, 2, "pending");
  const session = (await api.get(`/users/${user}/session`)).body;
  assert.equal(session.credits.expiries, [{ grant_id: "soon", at: new Date(soon).toISOString(), remaining: 1 }]);
  near(session.credits.pending, 2, "pending in the session view");
});

t("an expired grant's remainder leaves the balance at its expires_at and appears in the ledger", async ({ api }) => {
  const user = await userOnPlan(api, PREPAID, THIS_MONTH);
  const expiresAt = Date.now() + 3_000;
  assert.is((await api.post(`/users/${user}/credits`, { id: "short", amount: 0.5, priority: 10, expires_at: new Date(expiresAt).toISOString() })).status, 201);
  assert.is((await api.post(`/users/${user}/credits`, { id: "long", amount: 1 })).status, 201);
  await sendEvents(api, [usageJson(user, 0.2)]);
  await eventually(async () => Math.abs((await credits(api, user)).balance - 1.3) < 1e-9, 30_000, "0.20 drawn from the short grant");
  const entry = await eventually(async () => (await ledger(api, user)).find((e) => e.type === "expiry"), 60_000, "the expiry in the ledger");
  assert.ok(Date.now() >= expiresAt, "not before expires_at");
  assert.equal([entry.amount, entry.grant_id], [-0.3, "short"]);
  const c = await credits(api, user);
  near(c.balance, 1, "what was left of the short grant is gone");
  const short = c.grants.find((g: any) => g.id === "short");
  assert.equal([short.status, short.remaining], ["expired", 0]);
});

t("the same batch sent twice draws once", async ({ api }) => {
  const user = await userOnPlan(api, PREPAID, THIS_MONTH);
  assert.is((await api.post(`/users/${user}/credits`, { id: "g", amount: 10 })).status, 201);
  const batch = Array.from({ length: 20 }, () => usageJson(user, 0.05));
  await sendEvents(api, batch);
  const replay = await sendEvents(api, batch);
  assert.is(replay.duplicates, 20);
  // A further event after the replay: once it is drawn, the replay would have been too.
  await sendEvents(api, [usageJson(user, 0.5)]);
  await eventually(async () => Math.abs((await credits(api, user)).balance - 8.5) < 1e-9, 30_000, "1.50 drawn, once");
  const entries = await ledger(api, user);
  near(entries.filter((e) => e.type === "usage").reduce((s, e) => s + e.amount, 0), -1.5, "ledger usage");
});

t.run();
