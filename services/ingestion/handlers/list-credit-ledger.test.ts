// ListCreditLedger over gRPC: entries newest first with the balance after each, pages by cursor,
// its checks, and users of other products not found.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { productWithUser, withIngestion, type IngestionSuite } from "../testing/suite.ts";

const t = suite<IngestionSuite>("ListCreditLedger");
withIngestion(t);

t("grants and a void as entries, newest first with the balance after each; pages of 2 by cursor give the same list", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, { max_spend_per_period: 0, credits_enabled: true });
  assert.equal((await ingestion.listCreditLedger({ productId, userId })).entries, []);
  for (const [grantId, amount] of [["a", 1], ["b", 2], ["c", 4]] as const) await ingestion.createCreditGrant({ productId, userId, grantId, amount });
  await ingestion.voidCreditGrant({ productId, userId, grantId: "b" });

  const whole = await ingestion.listCreditLedger({ productId, userId });
  assert.is(whole.nextCursor, undefined);
  assert.equal(whole.entries.map((e) => [e.type, e.grantId, e.amount, e.balanceAfter]), [
    ["void", "b", -2, 5],
    ["grant", "c", 4, 7],
    ["grant", "b", 2, 3],
    ["grant", "a", 1, 1],
  ]);

  const paged: typeof whole.entries = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await ingestion.listCreditLedger({ productId, userId, limit: 2, cursor });
    assert.ok(page.entries.length <= 2);
    paged.push(...page.entries);
    cursor = page.nextCursor;
    pages++;
  } while (cursor);
  assert.is(pages, 2);
  assert.equal(paged, whole.entries);
});

t("refuses a limit outside 1-200 and a cursor it did not give; unknown users and other products' users are NOT_FOUND", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack);
  for (const limit of [-1, 201]) {
    const err = await rpcFailure(ingestion.listCreditLedger({ productId, userId, limit }));
    assert.equal([err?.code, err?.rawMessage], [Code.InvalidArgument, "limit must be 1-200"], String(limit));
  }
  assert.equal((await ingestion.listCreditLedger({ productId, userId, limit: 200 })).entries, []);
  const bad = await rpcFailure(ingestion.listCreditLedger({ productId, userId, cursor: "not-a-cursor" }));
  assert.equal([bad?.code, bad?.rawMessage], [Code.InvalidArgument, "cursor is not one this service gave"]);
  const other = await stack.newProduct("Other");
  for (const req of [{ productId, userId: "nobody" }, { productId: other.productId, userId }]) {
    assert.is((await rpcFailure(ingestion.listCreditLedger(req)))?.code, Code.NotFound, req.productId);
  }
});

t.run();
