// Credit webhooks end to end through the gateway: credits.low fires once per crossing (not
// again while the balance stays low, again after a grant lifted it above credits_low_at),
// credits.depleted whenever the balance goes from above 0 to 0 (usage or an expiry),
// credits.expired with the amount that expired;
// each signed, each once.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { signatureValid, type Receiver } from "../services/webhooks/testing/receiver.ts";
import { eventually } from "./support/eventually.ts";
import { teamOnPlan, userOnPlan } from "./support/rest.ts";
import { withWebhookStack, type TestStack } from "./support/stack.ts";

const t = suite<{ stack: TestStack; rx: Receiver }>("credit webhooks end to end");

withWebhookStack(t, { ingestion: { relayIntervalMs: 50, idlePollMaxMs: 1_000 } });

const TYPES = ["credits.low", "credits.depleted", "credits.expired"];
const PREPAID = { max_spend_per_period: 0, credits_enabled: true, credits_low_at: 1 };
/** A subscription period that began yesterday. */
const period = () => ({ period_start: new Date(Date.now() - 86_400_000).toISOString(), period_end: new Date(Date.now() + 29 * 86_400_000).toISOString() });

t("credits.low once per crossing, re-armed by a grant; depleted at 0; expired with its amount", async ({ stack, rx }) => {
  const { api, productId } = await stack.newProduct("Credit hooks");
  const user = await userOnPlan(api, PREPAID, period());
  const ep = await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: TYPES });
  assert.is(ep.status, 201, JSON.stringify(ep.body));
  const secret: string = ep.body.secret;
  const mine = (type: string) => rx.of(type).filter((r) => r.json?.product_id === productId);

  const spend = async (cost: number) => {
    const res = await api.post("/events/batch", [{ id: randomUUID(), user_id: user, timestamp: new Date().toISOString(), model: "m", input_tokens: 1, output_tokens: 1, cost_total: cost }]);
    assert.is(res.status, 200, JSON.stringify(res.body));
  };
  const balance = async () => (await api.get(`/users/${user}/credits`)).body.balance as number;
  const settled = (b: number) => eventually(async () => Math.abs((await balance()) - b) < 1e-9, 30_000, `balance ${b}`);

  assert.is((await api.post(`/users/${user}/credits`, { id: "pay_1", amount: 3 })).status, 201);
  await spend(1.5); // 3 -> 1.5: above low_at
  await settled(1.5);
  await spend(1); // 1.5 -> 0.5: crosses
  await settled(0.5);
  await eventually(() => mine("credits.low").length === 1, 30_000, "credits.low");
  await spend(0.2); // still low: nothing
  await settled(0.3);
  assert.is((await api.post(`/users/${user}/credits`, { id: "pay_2", amount: 2 })).status, 201); // 2.3: re-armed
  await spend(1.6); // 2.3 -> 0.7: crosses again
  await settled(0.7);
  await eventually(() => mine("credits.low").length === 2, 30_000, "the second credits.low");
  await spend(0.7); // 0.7 -> 0: depleted
  await settled(0);
  await eventually(() => mine("credits.depleted").length === 1, 30_000, "credits.depleted");

  const expiresAt = Date.now() + 2_000;
  assert.is((await api.post(`/users/${user}/credits`, { id: "promo", amount: 0.4, kind: "promotional", expires_at: new Date(expiresAt).toISOString() })).status, 201);
  const expired = await eventually(() => mine("credits.expired")[0], 60_000, "credits.expired");
  assert.ok(Date.now() >= expiresAt);
  assert.equal(expired.json.data, { user_id: user, balance: 0, low_at: 1, grant_id: "promo", amount: 0.4 });

  // The expiry was the last change: a webhook decided before it that came twice would be here by now.
  const low = mine("credits.low");
  assert.equal(low.map((r) => r.json.data.balance), [0.5, 0.7]);
  // Depleted again by the expiry: the promotional grant had lifted the balance above 0 (not to low_at: no re-arm).
  await eventually(() => mine("credits.depleted").length === 2, 30_000, "credits.depleted of the expiry");
  assert.equal(mine("credits.depleted").map((r) => r.json.data.balance), [0, 0]);
  assert.is(mine("credits.expired").length, 1);
  for (const r of [...low, ...mine("credits.depleted"), expired]) {
    assert.ok(signatureValid(secret, r), `${r.json.type} signature`);
    assert.is(r.json.data.user_id, user);
  }
});

t("credits.low is armed again by a grant that became effective later (no write lifted the balance)", async ({ stack, rx }) => {
  const { api, productId } = await stack.newProduct("Credit hooks, a later grant");
  const user = await userOnPlan(api, PREPAID, period());
  assert.is((await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: TYPES })).status, 201);
  const mine = (type: string) => rx.of(type).filter((r) => r.json?.product_id === productId);
  const spend = async (cost: number) =>
    assert.is((await api.post("/events/batch", [{ id: randomUUID(), user_id: user, timestamp: new Date().toISOString(), model: "m", cost_total: cost }])).status, 200);
  const settled = (b: number) => eventually(async () => Math.abs((await api.get(`/users/${user}/credits`)).body.balance - b) < 1e-9, 30_000, `balance ${b}`);
  assert.is((await api.post(`/users/${user}/credits`, { id: "now", amount: 2 })).status, 201);
  await spend(1.5); // 2 -> 0.5: crosses
  await eventually(() => mine("credits.low").length === 1, 30_000, "credits.low");
  assert.is((await api.post(`/users/${user}/credits`, { id: "later", amount: 2, effective_at: new Date(Date.now() + 1_500).toISOString() })).status, 201);
  await settled(2.5); // effective: 2.5, with no write
  await spend(2); // 2.5 -> 0.5: crosses again
  await eventually(() => mine("credits.low").length === 2, 30_000, "the second credits.low");
  assert.equal(mine("credits.low").map((r) => r.json.data.balance), [0.5, 0.5]);
});

t("a plan with credits off announces no credits.low or credits.depleted when a grant is voided", async ({ stack, rx }) => {
  const { api, productId } = await stack.newProduct("Credits off hooks");
  const off = await userOnPlan(api, { max_spend_per_period: 0, credits_enabled: false }, period());
  const on = await userOnPlan(api, PREPAID, period());
  assert.is((await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: TYPES })).status, 201);
  for (const user of [off, on]) {
    assert.is((await api.post(`/users/${user}/credits`, { id: "gift", amount: 2 })).status, 201);
    assert.is((await api.post(`/users/${user}/credits/gift/void`)).status, 200);
  }
  const mine = (type: string) => rx.of(type).filter((r) => r.json?.product_id === productId);
  // The user with credits on was voided second: once its webhook is here, the first one's would be too.
  await eventually(() => mine("credits.depleted").length === 1, 30_000, "credits.depleted of the user with credits on");
  const named = [...mine("credits.low"), ...mine("credits.depleted")].map((r) => r.json.data.user_id);
  assert.ok(named.includes(on) && !named.includes(off), JSON.stringify(named));
});

t("a team's pool: credits.low, credits.depleted and credits.expired name the team (team_id), signed, each once", async ({ stack, rx }) => {
  const { api, productId } = await stack.newProduct("Team credit hooks");
  const member = `member-${randomUUID()}`;
  assert.is((await api.post("/users", { external_user_id: member })).status, 201);
  const teamId = await teamOnPlan(api, PREPAID, period(), [member], `team|${randomUUID()}`);
  const enc = encodeURIComponent(teamId);
  const ep = await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: TYPES });
  assert.is(ep.status, 201, JSON.stringify(ep.body));
  const mine = (type: string) => rx.of(type).filter((r) => r.json?.product_id === productId);
  const settled = (b: number) => eventually(async () => Math.abs((await api.get(`/teams/${enc}/credits`)).body.balance - b) < 1e-9, 30_000, `pool ${b}`);

  assert.is((await api.post(`/teams/${enc}/credits`, { id: "pay_1", amount: 2 })).status, 201);
  const res = await api.post("/events/batch", [{ id: randomUUID(), user_id: member, timestamp: new Date().toISOString(), model: "m", input_tokens: 1, output_tokens: 1, cost_total: 2 }]);
  assert.is(res.status, 200, JSON.stringify(res.body));
  await settled(0);
  const low = await eventually(() => mine("credits.low")[0], 30_000, "credits.low of the pool");
  const depleted = await eventually(() => mine("credits.depleted")[0], 30_000, "credits.depleted of the pool");
  assert.equal(low.json.data, { team_id: teamId, balance: 0, low_at: 1 });
  assert.equal(depleted.json.data, { team_id: teamId, balance: 0, low_at: 1 });

  const expiresAt = Date.now() + 2_000;
  assert.is((await api.post(`/teams/${enc}/credits`, { id: "promo", amount: 0.4, expires_at: new Date(expiresAt).toISOString() })).status, 201);
  const expired = await eventually(() => mine("credits.expired")[0], 60_000, "credits.expired of the pool");
  assert.ok(Date.now() >= expiresAt);
  assert.equal(expired.json.data, { team_id: teamId, balance: 0, low_at: 1, grant_id: "promo", amount: 0.4 });
  const entries = (await api.get(`/teams/${enc}/credits/ledger`)).body.entries;
  assert.equal(entries[0], { ...entries[0], type: "expiry", amount: -0.4, grant_id: "promo" }, "the expiry in the pool's ledger");
  for (const r of [low, depleted, expired]) assert.ok(signatureValid(ep.body.secret, r), `${r.json.type} signature`);
  assert.is(mine("credits.low").length, 1);
});

t("a grant posted pending pays the overdraft when it takes effect: its expiry takes only the rest, and the balance ends at 0", async ({ stack, rx }) => {
  const { api, productId } = await stack.newProduct("Credit hooks, an overdraft and a later grant");
  const user = await userOnPlan(api, PREPAID, period());
  assert.is((await api.post("/webhooks/endpoints", { url: rx.url, subscribed_events: TYPES })).status, 201);
  const mine = (type: string) => rx.of(type).filter((r) => r.json?.product_id === productId);
  const credits = async () => (await api.get(`/users/${user}/credits`)).body as { balance: number; overdraft: number };
  assert.is((await api.post(`/users/${user}/credits`, { id: "pay_1", amount: 1 })).status, 201);
  // A call without an estimate spends past the balance: $0.50 of overdraft.
  const spent = await api.post("/events/batch", [{ id: randomUUID(), user_id: user, timestamp: new Date().toISOString(), model: "m", cost_total: 1.5 }]);
  assert.is(spent.status, 200, JSON.stringify(spent.body));
  await eventually(async () => (await credits()).overdraft === 0.5 || null, 30_000, "the overdraft");
  const effectiveAt = Date.now() + 1_000;
  const expiresAt = effectiveAt + 2_000;
  const later = { id: "later", amount: 2, effective_at: new Date(effectiveAt).toISOString(), expires_at: new Date(expiresAt).toISOString() };
  assert.is((await api.post(`/users/${user}/credits`, later)).status, 201);
  // In effect, with nothing written since: the answers read the overdraft paid.
  await eventually(async () => {
    const c = await credits();
    return (c.overdraft === 0 && Math.abs(c.balance - 1.5) < 1e-9) || null;
  }, 30_000, "the overdraft paid by the grant in effect");
  const expired = await eventually(() => mine("credits.expired")[0], 60_000, "credits.expired");
  assert.equal([expired.json.data.grant_id, expired.json.data.amount, expired.json.data.balance], ["later", 1.5, 0]);
  const after = await credits();
  assert.equal([after.balance, after.overdraft], [0, 0]);
  const ledger = (await api.get(`/users/${user}/credits/ledger`)).body.entries as { type: string; amount: number }[];
  assert.equal(ledger.filter((e) => e.type === "expiry").map((e) => e.amount), [-1.5]);
});

t.run();
