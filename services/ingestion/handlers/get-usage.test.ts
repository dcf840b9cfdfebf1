// GetUsage over gRPC: the periods it reads and what it refuses.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { productWithUser, usageEvent, withIngestion, type IngestionSuite } from "../testing/suite.ts";

const t = suite<IngestionSuite>("GetUsage");
withIngestion(t);

t("reads the current period, the current month and a named month; refuses another period and an unknown user", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack);
  await ingestion.ingestUsageEvents({ productId, events: [usageEvent(userId, { costTotal: 1.5 }), usageEvent(userId, { costTotal: 0.5, model: "claude" })] });
  const month = new Date().toISOString().slice(0, 7);
  for (const period of ["", "current_period", "current_month", month]) {
    const u = await ingestion.getUsage({ productId, userId, period });
    assert.equal([u.period, u.totalCost, u.totalTokens, u.tokensByModel], [period || "current_period", 2, 30n, { "gpt-4o": 15, claude: 15 }], period);
  }
  const before = await ingestion.getUsage({ productId, userId, period: "2020-01" });
  assert.equal([before.totalCost, before.totalTokens], [0, 0n]);
  for (const period of ["2020-13", "last_week"]) {
    assert.is((await rpcFailure(ingestion.getUsage({ productId, userId, period })))?.code, Code.InvalidArgument, period);
  }
  assert.is((await rpcFailure(ingestion.getUsage({ productId, userId: "nobody" })))?.code, Code.NotFound);
});

t.run();
