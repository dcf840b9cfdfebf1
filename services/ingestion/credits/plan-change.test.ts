// Credits and a plan change within a period: what the user spent while its plan drew no credits
// is never drawn (BUDGETS.md §3), by the settle, the session's cap or a lease.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Api } from "../../../test/support/http.ts";
import { productWithUser, withIngestion, type IngestionSuite } from "../testing/suite.ts";

const t = suite<IngestionSuite>("credits across a plan change");
withIngestion(t);

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const close = (a: number, b: number, msg: string) => assert.ok(Math.abs(a - b) < 1e-9, `${msg}: ${a} != ${b}`);

/** A user who spent `spent` on a plan without credits, then moved (same period) to `plan` and was granted $20. */
async function movedToCredits(stack: IngestionSuite["stack"], before: Record<string, unknown>, spent: number, plan: Record<string, unknown>) {
  const { api, productId, userId } = await productWithUser(stack, before);
  const at = () => ({ id: randomUUID(), user_id: userId, timestamp: new Date().toISOString(), cost_total: 0 });
  assert.is((await api.post("/events/batch", [{ ...at(), cost_total: spent }])).status, 200);
  const session = (await api.get(`/users/${userId}/session`)).body;
  const { start, end } = session.billing_period;
  const created = await api.post("/config/plans", { plans: [{ name: `credits-${randomUUID()}`, credits_enabled: true, ...plan }] });
  assert.is(created.status, 201);
  assert.is((await api.post(`/users/${userId}/subscription`, { plan_id: created.body.plans[0].id, period_start: start, period_end: end })).status, 200);
  assert.is((await api.post(`/users/${userId}/credits`, { id: "topup", amount: 20 })).status, 201);
  const spend = async (cost: number) => assert.is((await api.post("/events/batch", [{ ...at(), cost_total: cost }])).status, 200);
  return { api, productId, userId, spend };
}

async function left(api: Api, userId: string): Promise<{ used: number; left: number }> {
  const dims = (await api.get(`/users/${userId}/limits`)).body.limits as { reason: string; used: number; max: number }[];
  const d = dims.find((x) => x.reason === "total_spend")!;
  return { used: d.used, left: d.max - d.used };
}

t("a free plan's spend is not drawn from the credits of the prepaid plan the user moves to", async ({ stack, ingestion }) => {
  const { api, productId, userId, spend } = await movedToCredits(stack, { max_spend_per_period: 5 }, 5, { max_spend_per_period: 0 });
  const before = await left(api, userId);
  close(before.used, 5, "the period's spend carries over");
  close(before.left, 20, "what is left to spend is the balance");
  const session = (await api.get(`/users/${userId}/session`)).body;
  close(session.credits.balance, 20, "nothing drawn yet");
  const dim = (session.limits as { reason: string; used: number; max: number }[]).find((d) => d.reason === "total_spend")!;
  close(dim.max - dim.used, 20, "the session's cap leaves the balance too");
  // A lease may take the whole balance, no more.
  const lease = await ingestion.acquireLease({ productId, userId, holder: "h1", need: 20, want: 25 });
  close(lease.lease!.granted, 20, "a lease grants the balance");
  await ingestion.releaseLease({ productId, userId, leaseId: "h1", used: 0 });

  await spend(1);
  close((await api.get(`/users/${userId}/credits`)).body.balance, 19, "only the prepaid usage is drawn");
  const after = await left(api, userId);
  close(after.left, 19, "what is left is the balance");
  const entries = (await api.get(`/users/${userId}/credits/ledger`)).body.entries as { type: string; amount: number }[];
  close(entries.filter((e) => e.type === "usage").reduce((a, e) => a + e.amount, 0), -1, "the ledger's usage is the prepaid usage");
});

t("what a plan without credits spent uses the new plan's allowance first", async ({ stack }) => {
  const { api, userId, spend } = await movedToCredits(stack, { max_spend_per_period: 5 }, 3, { max_spend_per_period: 10 });
  close((await left(api, userId)).left, 27, "the allowance's $7 and the balance");
  await spend(8);
  close((await api.get(`/users/${userId}/credits`)).body.balance, 19, "$11 of $10 allowance: $1 drawn");
  close((await left(api, userId)).left, 19, "what is left is the balance");
});

/** A user on a prepaid plan with $20 of credits who spent `cost` two hours ago (drawn); `now` is when. */
async function drewTwoHoursAgo(stack: IngestionSuite["stack"], cost: number) {
  const { api, userId } = await productWithUser(stack, { max_spend_per_period: 0, credits_enabled: true });
  assert.is((await api.post(`/users/${userId}/credits`, { id: "topup", amount: 20 })).status, 201);
  const now = Date.now();
  const event = (at: number, c: number) => ({ id: randomUUID(), user_id: userId, timestamp: new Date(at).toISOString(), cost_total: c });
  assert.is((await api.post("/events/batch", [event(now - 2 * HOUR, cost)])).status, 200);
  close((await api.get(`/users/${userId}/credits`)).body.balance, 20 - cost, "drawn on the prepaid plan");
  return { api, userId, now, event };
}

t("events a late change moves to a period whose plan draws no credits take no draw along: they are not paid twice", async ({ stack }) => {
  const { api, userId, now, event } = await drewTwoHoursAgo(stack, 2);

  // Told only now: the user was on a free plan, with new dates, since three hours ago. The event moves there.
  const plans = await api.post("/config/plans", { plans: [{ name: `free-${randomUUID()}`, max_spend_per_period: 5 }, { name: `prepaid-${randomUUID()}`, max_spend_per_period: 0, credits_enabled: true }] });
  const [free, prepaid] = (plans.body.plans as { id: string }[]).map((p) => p.id);
  const dates = { period_start: new Date(now - 3 * HOUR).toISOString(), period_end: new Date(now + 30 * DAY).toISOString() };
  assert.is((await api.post(`/users/${userId}/subscription`, { plan_id: free, ...dates })).status, 200);
  const moved = (await api.get(`/users/${userId}/session`)).body;
  assert.is(moved.billing_period.start, dates.period_start);
  close(moved.current_usage.period_cost, 2, "moved");
  close((await api.get(`/users/${userId}/credits`)).body.balance, 18, "draws never go back");

  // Back on a prepaid plan in that period: the $2 was spent without credits there, and drawn
  // once already; what is left to spend is the balance, and the next $1 draws $1.
  assert.is((await api.post(`/users/${userId}/subscription`, { plan_id: prepaid, ...dates })).status, 200);
  close((await left(api, userId)).left, 18, "what is left is the balance");
  assert.is((await api.post("/events/batch", [event(Date.now(), 1)])).status, 200);
  close((await api.get(`/users/${userId}/credits`)).body.balance, 17, "the next dollar is drawn");
  close((await left(api, userId)).left, 17, "what is left is the balance");
});

t("events moved twice by late changes are drawn once: the second move takes the first one's draw along", async ({ stack }) => {
  // On a free plan when the event came (credits kept, never drawn), then told late of prepaid plans.
  const { api, userId } = await productWithUser(stack, { max_spend_per_period: 5 });
  assert.is((await api.post(`/users/${userId}/credits`, { id: "topup", amount: 20 })).status, 201);
  const now = Date.now();
  const event = (at: number, c: number) => ({ id: randomUUID(), user_id: userId, timestamp: new Date(at).toISOString(), cost_total: c });
  assert.is((await api.post("/events/batch", [event(now - 2 * HOUR, 2)])).status, 200);
  close((await api.get(`/users/${userId}/credits`)).body.balance, 20, "a free plan draws nothing");

  const plans = await api.post("/config/plans", { plans: [1, 2].map((n) => ({ name: `prepaid-${n}-${randomUUID()}`, max_spend_per_period: 0, credits_enabled: true })) });
  const [first, second] = (plans.body.plans as { id: string }[]).map((p) => p.id) as [string, string];
  const end = new Date(now + 30 * DAY).toISOString();
  const subscribe = async (plan: string, start: number, cost: number) => {
    assert.is((await api.post(`/users/${userId}/subscription`, { plan_id: plan, period_start: new Date(start).toISOString(), period_end: end })).status, 200);
    const session = (await api.get(`/users/${userId}/session`)).body;
    assert.is(session.billing_period.start, new Date(start).toISOString());
    close(session.current_usage.period_cost, cost, "the events moved into the new period");
  };
  await subscribe(first, now - 3 * HOUR, 2);
  assert.is((await api.post("/events/batch", [event(Date.now(), 1)])).status, 200);
  close((await api.get(`/users/${userId}/credits`)).body.balance, 17, "the prepaid period draws for what moved in and for the new dollar");
  await subscribe(second, now - 150 * 60_000, 3);
  assert.is((await api.post("/events/batch", [event(Date.now(), 1)])).status, 200);
  close((await api.get(`/users/${userId}/credits`)).body.balance, 16, "the moved $3 is drawn once, and the new dollar");
  close((await left(api, userId)).left, 16, "what is left is the balance");
  const entries = (await api.get(`/users/${userId}/credits/ledger`)).body.entries as { type: string; amount: number }[];
  close(entries.filter((e) => e.type === "usage").reduce((a, e) => a + e.amount, 0), -4, "the ledger's usage is the usage");
});

t.run();
