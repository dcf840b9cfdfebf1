// GetLimits over gRPC: every dimension of the user's plan with its usage now, the balance counted
// into the spend cap with credits, none without a plan, and users of other products not found.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { productWithUser, usageEvent, withIngestion, type IngestionSuite } from "../testing/suite.ts";

const t = suite<IngestionSuite>("GetLimits");
withIngestion(t);

t("the plan's dimensions in order with what was used: spend, session, the model's tokens, a named window", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, {
    max_spend_per_period: 20,
    max_spend_per_session: 2,
    soft_gate_at: 0.7,
    model_limits: { "gpt-4o": { max_tokens_per_period: 1_000 } },
    limits: [{ name: "daily", metric: "requests", max: 10, window: "day" }],
  });
  await ingestion.ingestUsageEvents({ productId, events: [usageEvent(userId, { costTotal: 5 }), usageEvent(userId, { costTotal: 1 })] });
  const res = await ingestion.getLimits({ productId, userId });
  assert.is(res.userId, userId);
  assert.equal(res.limits.map((d) => [d.reason, d.metric, d.window, d.max, d.used, d.pct]), [
    ["total_spend", "spend", "period", 20, 6, 0.3],
    ["session_spend", "spend", "session", 2, 0, 0],
    ["model_limit:gpt-4o", "tokens", "period", 1_000, 30, 0.03],
    ["limit:daily", "requests", "day", 10, 2, 0.2],
  ]);
  assert.equal([res.limits[0]!.softGateAt, res.limits[0]!.hardGateAt, res.limits[0]!.credits], [0.7, 1, undefined]);
  assert.ok(res.limits[0]!.resetsAt && res.limits[3]!.windowStart, "period and day windows say when they start and reset");
});

t("a limit whose hard gate is at 0 blocks for good: no resets_at, as a cap of 0", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, {
    limits: [
      { name: "off", metric: "requests", max: 10, window: "day", soft_gate_at: 0, hard_gate_at: 0 },
      { name: "daily", metric: "requests", max: 10, window: "day" },
    ],
  });
  const res = await ingestion.getLimits({ productId, userId });
  assert.equal(res.limits.map((d) => [d.reason, d.resetsAt === undefined]), [
    ["limit:off", true],
    ["limit:daily", false],
  ]);
});

t("with credits the spend cap is the allowance plus the balance; without a plan there is no dimension", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, { max_spend_per_period: 1, credits_enabled: true, credits_low_at: 0.5 });
  await ingestion.createCreditGrant({ productId, userId, grantId: "g", amount: 3 });
  const spend = (await ingestion.getLimits({ productId, userId })).limits[0]!;
  assert.equal([spend.reason, spend.max, spend.credits?.balance, spend.credits?.lowAt], ["total_spend", 4, 3, 0.5]);
  const free = await productWithUser(stack);
  assert.equal((await ingestion.getLimits({ productId: free.productId, userId: free.userId })).limits, []);
});

t("an empty user_id is INVALID_ARGUMENT; an unknown user and another product's user are NOT_FOUND", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, { max_spend_per_period: 1 });
  assert.is((await rpcFailure(ingestion.getLimits({ productId, userId: "" })))?.code, Code.InvalidArgument);
  const other = await stack.newProduct("Other");
  for (const req of [{ productId, userId: "nobody" }, { productId: other.productId, userId }]) {
    const err = await rpcFailure(ingestion.getLimits(req));
    assert.equal([err?.code, err?.rawMessage], [Code.NotFound, `user "${req.userId}" not found`], req.productId);
  }
});

t.run();
