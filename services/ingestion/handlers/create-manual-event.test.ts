// CreateManualEvent over gRPC: its checks, its pricing by the plan (rates per 1,000 tokens), and its idempotency key.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { productWithUser, withIngestion, type IngestionSuite } from "../testing/suite.ts";

const t = suite<IngestionSuite>("CreateManualEvent");
withIngestion(t);

t("refuses a negative cost, tokens out of bounds, an empty key and an unknown user", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack);
  for (const req of [{ cost: -1 }, { inputTokens: -1n }, { idempotencyKey: "" }]) {
    assert.is((await rpcFailure(ingestion.createManualEvent({ productId, userId, ...req })))?.code, Code.InvalidArgument, JSON.stringify(req, (_, v) => (typeof v === "bigint" ? String(v) : v)));
  }
  assert.is((await rpcFailure(ingestion.createManualEvent({ productId, userId: "nobody", cost: 1 })))?.code, Code.NotFound);
  assert.is((await ingestion.getUsage({ productId, userId })).totalCost, 0);
});

t("prices tokens by the plan's rates when no cost is sent, and counts it as manual usage", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, { cost_rates: { "my-model": { input: 1, output: 2 } } });
  const res = await ingestion.createManualEvent({ productId, userId, model: "my-model", inputTokens: 1_000n, outputTokens: 500n });
  assert.is(res.created, true);
  assert.equal([res.event!.source, res.event!.model, res.event!.cost], ["manual", "my-model", 2]);
  assert.is((await ingestion.getUsage({ productId, userId })).totalCost, 2);
});

t("an idempotency key sent again answers the first event and counts it once", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack);
  const idempotencyKey = randomUUID();
  const first = await ingestion.createManualEvent({ productId, userId, cost: 3, idempotencyKey });
  const again = await ingestion.createManualEvent({ productId, userId, cost: 5, idempotencyKey });
  assert.equal([first.created, again.created, again.event!.id, again.event!.cost], [true, false, first.event!.id, 3]);
  assert.is((await ingestion.getUsage({ productId, userId })).totalCost, 3);
});

t.run();
