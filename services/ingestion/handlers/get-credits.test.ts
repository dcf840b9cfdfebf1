// GetCredits over gRPC: balance, pending and the plan's low mark, the grants newest first, and
// users of other products not found.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { toTimestamp } from "@meter/lib/time";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { productWithUser, withIngestion, type IngestionSuite } from "../testing/suite.ts";

const t = suite<IngestionSuite>("GetCredits");
withIngestion(t);

t("a user with no grant: all zero, no grants; the plan's credits_low_at as low_at", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, { max_spend_per_period: 0, credits_enabled: true, credits_low_at: 0.5 });
  const c = await ingestion.getCredits({ productId, userId });
  assert.equal([c.userId, c.balance, c.pending, c.overdraft, c.lowAt, c.grants], [userId, 0, 0, 0, 0.5, []]);
  // Without a plan there is no low mark.
  const free = await productWithUser(stack);
  assert.is((await ingestion.getCredits({ productId: free.productId, userId: free.userId })).lowAt, undefined);
});

t("active grants count into the balance, later ones into pending, a voided one into neither; grants newest first", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, { max_spend_per_period: 0, credits_enabled: true });
  const grant = (grantId: string, amount: number, fields: Record<string, unknown> = {}) => ingestion.createCreditGrant({ productId, userId, grantId, amount, ...fields });
  await grant("a", 1);
  await grant("b", 2.25);
  await grant("c", 4, { effectiveAt: toTimestamp(new Date(Date.now() + 86_400_000)) });
  await grant("d", 8);
  await ingestion.voidCreditGrant({ productId, userId, grantId: "d" });
  const c = await ingestion.getCredits({ productId, userId });
  assert.equal([c.balance, c.pending, c.overdraft], [3.25, 4, 0]);
  assert.equal(c.grants.map((g) => [g.id, g.status, g.remaining]), [["d", "voided", 0], ["c", "pending", 4], ["b", "active", 2.25], ["a", "active", 1]]);
});

t("an empty user_id is INVALID_ARGUMENT; an unknown user and another product's user are NOT_FOUND", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack);
  await ingestion.createCreditGrant({ productId, userId, grantId: "a", amount: 1 });
  const empty = await rpcFailure(ingestion.getCredits({ productId, userId: "" }));
  assert.equal([empty?.code, empty?.rawMessage], [Code.InvalidArgument, "user_id is required"]);
  const other = await stack.newProduct("Other");
  for (const req of [{ productId, userId: "nobody" }, { productId: other.productId, userId }]) {
    assert.is((await rpcFailure(ingestion.getCredits(req)))?.code, Code.NotFound, req.productId);
  }
});

t.run();
