// Accounts changed through two replicas of the ingestion service on one database, each with its
// own copy of the accounts it last saw (CreditStore's cache): what a replica decides from its
// copy alone must not miss what the other wrote since.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MongoClient } from "mongodb";
import { freshDbName, withTestMongo } from "../../../test/support/database.ts";
import { RETENTION_DEFAULTS } from "../domain/retention-policy.ts";
import { OutboxStore } from "../store/outbox.ts";
import { accountId, emptyAccount, userOwner } from "./account.ts";
import { expireDue } from "./expiry.ts";
import { addGrant } from "./grants.ts";
import { CreditStore } from "./store.ts";

const t = suite<{ mongo: MongoClient; url: string }>("credit accounts through two replicas");
withTestMongo(t);

const HOUR = 3_600_000;

t("a grant added through one replica expires through the other, which had read the account before it", async ({ mongo }) => {
  const db = mongo.db(freshDbName("credit_replicas"));
  let now = Date.UTC(2026, 10, 15, 10);
  const replica = () => ({ credits: new CreditStore(db), outbox: new OutboxStore(db), now: () => new Date(now), retention: RETENTION_DEFAULTS });
  const [one, two] = [replica(), replica()];
  const productId = "p-replicas";
  const owner = userOwner("u");
  const plan = { lowAt: null, enabled: true };

  await addGrant(one, productId, owner, { id: "paid", amount: 1 }, plan);
  await addGrant(two, productId, owner, { id: "promo", amount: 5, expiresAt: new Date(now + 2 * HOUR) }, plan);
  // Past the promo's hour and the time its bucket stays open: the sweep runs on the first replica.
  now += 3 * HOUR;
  await expireDue(one);

  const record = await one.credits.grant(`${productId}|${owner}|promo`);
  assert.is(record?.status, "expired", "the grant is written down as expired");
  const account = await new CreditStore(db).account(accountId(productId, owner));
  assert.equal(Object.keys(account!.grants), ["paid"], "only the paid grant is left in the account");
  const webhooks = await two.outbox.webhooks.find({}).toArray();
  assert.ok(JSON.stringify(webhooks).includes("credits.expired"), "credits.expired is announced");
});

t("a grant re-sent by a request that read its record before it was spent whole and written down is not added again", async ({ mongo }) => {
  const db = mongo.db(freshDbName("credit_resent"));
  const now = Date.UTC(2026, 10, 15, 10);
  const deps = { credits: new CreditStore(db), outbox: new OutboxStore(db), now: () => new Date(now), retention: RETENTION_DEFAULTS };
  const productId = "p-resent";
  const owner = userOwner("u");
  const id = accountId(productId, owner);
  // $10 overdrawn: the top-up pays it whole, so the grant is depleted, written down and leaves the account.
  assert.ok(await deps.credits.apply([{ id, version: 0, after: { ...emptyAccount(productId, owner), overdraft_nano: 10e9, version: 1 } }]));
  const plan = { lowAt: null, enabled: true };
  const first = await addGrant(deps, productId, owner, { id: "pi_1", amount: 10 }, plan);
  assert.is(first.record.status, "depleted");
  // The second request read the record before its status was written.
  await deps.credits.grants.updateOne({ _id: first.record._id }, { $unset: { status: "" } });
  await addGrant(deps, productId, owner, { id: "pi_1", amount: 10 }, plan);
  const account = await new CreditStore(db).account(id);
  assert.equal([account!.overdraft_nano, Object.keys(account!.grants)], [0, []], "paid once, nothing added again");
});

t.run();
