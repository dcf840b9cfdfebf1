// VoidCreditGrant over gRPC: what is left goes to 0, voiding again answers the grant unchanged,
// and grant ids of other users or products are not found.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { productWithUser, withIngestion, type IngestionSuite } from "../testing/suite.ts";

const t = suite<IngestionSuite>("VoidCreditGrant");
withIngestion(t);

const PREPAID = { max_spend_per_period: 0, credits_enabled: true };

t("voids what is left of a grant, once: the balance drops by it; a second void answers the same grant", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, PREPAID);
  await ingestion.createCreditGrant({ productId, userId, grantId: "keep", amount: 1 });
  await ingestion.createCreditGrant({ productId, userId, grantId: "drop", amount: 2, description: "promo" });
  const voided = (await ingestion.voidCreditGrant({ productId, userId, grantId: "drop" })).grant!;
  assert.equal([voided.id, voided.status, voided.remaining, voided.amount, voided.description], ["drop", "voided", 0, 2, "promo"]);
  assert.is((await ingestion.getCredits({ productId, userId })).balance, 1);
  const again = (await ingestion.voidCreditGrant({ productId, userId, grantId: "drop" })).grant!;
  assert.equal(again, voided);
  assert.is((await ingestion.getCredits({ productId, userId })).balance, 1);
  // A voided grant's id cannot be granted again with other fields.
  assert.is((await rpcFailure(ingestion.createCreditGrant({ productId, userId, grantId: "drop", amount: 3 })))?.code, Code.AlreadyExists);
});

t("an unknown grant, another user's grant and another product's user are NOT_FOUND; a bad id INVALID_ARGUMENT", async ({ stack, ingestion }) => {
  const { api, productId, userId } = await productWithUser(stack, PREPAID);
  await ingestion.createCreditGrant({ productId, userId, grantId: "mine", amount: 1 });
  const nope = await rpcFailure(ingestion.voidCreditGrant({ productId, userId, grantId: "nope" }));
  assert.equal([nope?.code, nope?.rawMessage], [Code.NotFound, 'grant "nope" not found']);
  assert.is((await api.post("/users", { external_user_id: "neighbour" })).status, 201);
  assert.is((await rpcFailure(ingestion.voidCreditGrant({ productId, userId: "neighbour", grantId: "mine" })))?.code, Code.NotFound);
  const other = await stack.newProduct("Other");
  assert.is((await rpcFailure(ingestion.voidCreditGrant({ productId: other.productId, userId, grantId: "mine" })))?.code, Code.NotFound);
  const bad = await rpcFailure(ingestion.voidCreditGrant({ productId, userId, grantId: "" }));
  assert.equal([bad?.code, bad?.rawMessage], [Code.InvalidArgument, "grant id must be 1-128 printable characters"]);
  assert.is((await ingestion.getCredits({ productId, userId })).balance, 1, "the grant is untouched");
});

t.run();
