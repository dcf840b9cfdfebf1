// GetSession over gRPC: the plan in force (or the permissive defaults without one) and the
// current period's usage.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { productWithUser, usageEvent, withIngestion, type IngestionSuite } from "../testing/suite.ts";
import { NO_PLAN } from "./get-session.ts";

const t = suite<IngestionSuite>("GetSession");
withIngestion(t);

t("a user on a plan: sdk_enabled, the plan's config and the subscription's period with its usage", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, { max_spend_per_period: 20, soft_gate_at: 0.7, model_limits: { "gpt-4o": { max_tokens_per_period: 1_000 } } });
  await ingestion.ingestUsageEvents({ productId, events: [usageEvent(userId, { costTotal: 3 })] });
  // Twice: the second read may use the counter guessed from the first.
  for (let i = 0; i < 2; i++) {
    const s = await ingestion.getSession({ productId, userId });
    assert.equal([s.sdkEnabled, s.planConfig!.maxSpendPerPeriod, s.planConfig!.softGateAt, s.planConfig!.modelLimits["gpt-4o"]?.maxTokensPerPeriod], [true, 20, 0.7, 1_000n]);
    assert.equal([s.currentUsage!.periodCost, s.currentUsage!.periodTokensTotal, s.currentUsage!.periodTokensByModel], [3, 15n, { "gpt-4o": 15 }]);
    // The subscription's period (productWithUser starts it a day ago), not a calendar month.
    const start = Number(s.billingPeriod!.start!.seconds) * 1000;
    assert.ok(Math.abs(Date.now() - 86_400_000 - start) < 120_000, new Date(start).toISOString());
  }
});

t("a user without a plan: no plan, sdk disabled, permissive defaults, a calendar month; an unknown user is not found", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack);
  const s = await ingestion.getSession({ productId, userId });
  assert.equal([s.plan, s.sdkEnabled, s.planConfig!.maxSpendPerPeriod, s.planConfig!.hardGateAt], [NO_PLAN, false, undefined, 1]);
  const start = new Date(Number(s.billingPeriod!.start!.seconds) * 1000);
  assert.equal([start.getUTCDate(), start.getUTCHours()], [1, 0]);
  assert.is((await rpcFailure(ingestion.getSession({ productId, userId: "nobody" })))?.code, Code.NotFound);
});

t.run();
