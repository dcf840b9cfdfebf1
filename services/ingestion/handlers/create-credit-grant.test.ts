// CreateCreditGrant over gRPC: the grant as answered, a re-sent id that changes nothing, the
// checks of what is sent, and users of other products not found.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { toTimestamp } from "@meter/lib/time";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { productWithUser, withIngestion, type IngestionSuite } from "../testing/suite.ts";

const t = suite<IngestionSuite>("CreateCreditGrant");
withIngestion(t);

const PREPAID = { max_spend_per_period: 0, credits_enabled: true };

t("answers the grant with its defaults; the same id re-sent is created=false and granted once, other fields ALREADY_EXISTS", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, PREPAID);
  const sent = { productId, userId, grantId: "pay_1", amount: 2.5, description: "Top-up", metadata: { invoice: "in_1" } };
  const first = await ingestion.createCreditGrant(sent);
  const g = first.grant!;
  assert.equal([first.created, g.id, g.amount, g.remaining, g.kind, g.priority, g.status, g.description, g.metadata], [true, "pay_1", 2.5, 2.5, "paid", 50, "active", "Top-up", { invoice: "in_1" }]);
  assert.is(g.expiresAt, undefined);

  const again = await ingestion.createCreditGrant(sent);
  assert.equal([again.created, again.grant!.id, again.grant!.remaining, again.grant!.createdAt], [false, "pay_1", 2.5, g.createdAt]);
  assert.is((await ingestion.getCredits({ productId, userId })).balance, 2.5);

  const other = await rpcFailure(ingestion.createCreditGrant({ ...sent, amount: 3 }));
  assert.is(other?.code, Code.AlreadyExists);
  assert.match(other!.rawMessage, /grant "pay_1" exists with other fields/);
});

t("a grant re-sent after it expired is answered as it is; a new one that already expired is refused", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, PREPAID);
  const expiresAt = new Date(Date.now() + 1_500);
  const sent = { productId, userId, grantId: "soon", amount: 1, expiresAt: toTimestamp(expiresAt) };
  assert.is((await ingestion.createCreditGrant(sent)).created, true);
  while (Date.now() <= expiresAt.getTime() + 10) await new Promise((r) => setTimeout(r, expiresAt.getTime() + 20 - Date.now()));
  const again = await ingestion.createCreditGrant(sent);
  assert.equal([again.created, again.grant!.id], [false, "soon"], "the same grant, past its expiry: a repeat, not an error");
  const late = await rpcFailure(ingestion.createCreditGrant({ ...sent, grantId: "too-late" }));
  assert.is(late?.code, Code.InvalidArgument);
  assert.match(late!.rawMessage, /expires_at has passed/);
});

t("a grant effective later is pending; a promotional one keeps its kind and priority", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, PREPAID);
  const later = new Date(Date.now() + 86_400_000);
  const pending = (await ingestion.createCreditGrant({ productId, userId, grantId: "later", amount: 1, effectiveAt: toTimestamp(later) })).grant!;
  assert.equal([pending.status, pending.remaining, Number(pending.effectiveAt!.seconds)], ["pending", 1, Math.floor(later.getTime() / 1000)]);
  const promo = (await ingestion.createCreditGrant({ productId, userId, grantId: "promo", amount: 1, kind: "promotional", priority: 10 })).grant!;
  assert.equal([promo.kind, promo.priority, promo.status], ["promotional", 10, "active"]);
});

t("refuses what it cannot take with INVALID_ARGUMENT and says why; unknown users and other products' users are NOT_FOUND", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, PREPAID);
  const ok = { productId, userId, grantId: "g", amount: 1 };
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ amount: 0 }, /amount must be a number of dollars from 0.000000001 \(a nano-dollar\) to 1000000/],
    [{ amount: 1e-10 }, /from 0.000000001 \(a nano-dollar\)/],
    [{ amount: 1e10 }, /amount must be a number of dollars from/],
    [{ amount: 1_000_000.5 }, /amount must be a number of dollars from/],
    [{ kind: "gift" }, /kind must be "paid" or "promotional"/],
    [{ priority: 101 }, /priority must be a whole number from 0 to 100/],
    [{ priority: 1.5 }, /priority must be a whole number from 0 to 100/],
    [{ grantId: "" }, /grant id must be 1-128 printable characters/],
    [{ grantId: "x".repeat(129) }, /grant id must be 1-128 printable characters/],
    [{ grantId: "a\nb" }, /grant id must be 1-128 printable characters/],
    [{ effectiveAt: toTimestamp(new Date("2030-01-02T00:00:00Z")), expiresAt: toTimestamp(new Date("2030-01-01T00:00:00Z")) }, /expires_at must be after effective_at/],
    [{ description: "d".repeat(1025) }, /description must be at most 1024 characters/],
    [{ userId: "" }, /user_id is required/],
  ];
  for (const [change, says] of cases) {
    const err = await rpcFailure(ingestion.createCreditGrant({ ...ok, ...change }));
    assert.is(err?.code, Code.InvalidArgument, Object.keys(change).join());
    assert.match(err!.rawMessage, says);
  }
  // Two problems at once are both named.
  assert.match((await rpcFailure(ingestion.createCreditGrant({ ...ok, amount: -1, kind: "gift" })))!.rawMessage, /amount .*; kind/);
  assert.is((await ingestion.getCredits({ productId, userId })).grants.length, 0, "nothing refused was granted");

  const other = await stack.newProduct("Other");
  for (const req of [{ ...ok, userId: "nobody" }, { ...ok, productId: other.productId }]) {
    const err = await rpcFailure(ingestion.createCreditGrant(req));
    assert.is(err?.code, Code.NotFound, req.productId);
    assert.match(err!.rawMessage, /user ".*" not found/);
  }
});

t("live grants hold at most $2,000,000 in all, so a balance stays exact to the nano-dollar: past it ABORTED (409), and the grant is not kept", async ({ stack, ingestion, mongo }) => {
  const { productId, userId } = await productWithUser(stack, PREPAID);
  await ingestion.createCreditGrant({ productId, userId, grantId: "a", amount: 1_000_000 });
  await ingestion.createCreditGrant({ productId, userId, grantId: "b", amount: 999_999.999999999 });
  const over = await rpcFailure(ingestion.createCreditGrant({ productId, userId, grantId: "c", amount: 0.000000002 }));
  assert.is(over?.code, Code.Aborted);
  assert.match(over!.rawMessage, /live grants may hold at most \$2000000 in all .*bring them to \$2000000.000000001/);
  const credits = await ingestion.getCredits({ productId, userId });
  assert.equal([credits.balance, credits.grants.map((g) => g.id).sort()], [1_999_999.999999999, ["a", "b"]]);
  const index = await mongo.db(`${stack.dbPrefix}_ingestion`).collection<{ _id: string; grants: string[] }>("credit_index").findOne({ _id: `${productId}|user:${userId}` });
  assert.equal(index?.grants.sort(), ["a", "b"], "the refused id is not listed");
  // The refused id is free again: the same grant, once room was made, is created.
  await ingestion.voidCreditGrant({ productId, userId, grantId: "a" });
  assert.is((await ingestion.createCreditGrant({ productId, userId, grantId: "c", amount: 0.000000002 })).created, true);
});


t("grant ids whose keys run together across owners stay apart: no 409, repeat, or void through another owner", async ({ stack, ingestion }) => {
  // User "a" with grant "b|c" and user "a|b" with grant "c" would share a key joined by "|".
  const { api, productId, userId } = await productWithUser(stack, PREPAID);
  const plan = (await api.get("/config/plans")).body.plans[0].id;
  const other = `${userId}|b`;
  assert.is((await api.post("/users", { external_user_id: other })).status, 201);
  const day = 86_400_000;
  const sub = await api.post(`/users/${encodeURIComponent(other)}/subscription`, {
    plan_id: plan,
    period_start: new Date(Date.now() - day).toISOString(),
    period_end: new Date(Date.now() + 20 * day).toISOString(),
  });
  assert.is(sub.status, 200, JSON.stringify(sub.body));
  await ingestion.createCreditGrant({ productId, userId, grantId: "b|c", amount: 500 });

  // The other owner's void finds no grant of its own, and adds none to its balance.
  const voided = await rpcFailure(ingestion.voidCreditGrant({ productId, userId: other, grantId: "c" }));
  assert.is(voided?.code, Code.NotFound);
  assert.is((await ingestion.getCredits({ productId, userId: other })).balance, 0);

  // The same grant id sent for the other owner is a grant of its own, not a repeat of the first.
  const refused = await rpcFailure(ingestion.createCreditGrant({ productId, userId: other, grantId: "c", amount: 500 }));
  assert.is(refused?.code, Code.AlreadyExists);
  assert.match(refused!.rawMessage, /grant id "c" cannot be used/);
  assert.is((await ingestion.getCredits({ productId, userId: other })).balance, 0);
  assert.is((await ingestion.getCredits({ productId, userId })).balance, 500);
});

t.run();
