// GetPeriodSpends over gRPC: each registered user's current period once, the others left out.
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { productWithUser, usageEvent, withIngestion, type IngestionSuite } from "../testing/suite.ts";

const t = suite<IngestionSuite>("GetPeriodSpends");
withIngestion(t);

t("answers each registered user once with its current period's spend; unknown users are left out; at most 1,000 ids", async ({ stack, ingestion }) => {
  const { api, productId, userId } = await productWithUser(stack, { max_spend_per_period: 100 });
  const other = `u-${randomUUID()}`;
  assert.is((await api.post("/users", { external_user_id: other })).status, 201);
  await ingestion.ingestUsageEvents({ productId, events: [usageEvent(userId, { costTotal: 4 }), usageEvent(other, { costTotal: 1 })] });
  const { spends } = await ingestion.getPeriodSpends({ productId, userIds: [userId, "nobody", other, userId] });
  assert.equal(spends.map((s) => [s.userId, s.cost, s.totalTokens]), [[userId, 4, 15n], [other, 1, 15n]]);
  // The subscribed user's period is its subscription's, the other's a calendar month.
  assert.is.not(spends[0]!.periodStart!.seconds, spends[1]!.periodStart!.seconds);
  assert.equal((await ingestion.getPeriodSpends({ productId, userIds: [] })).spends, []);
  const many = Array.from({ length: 1_001 }, (_, i) => `u${i}`);
  assert.is((await rpcFailure(ingestion.getPeriodSpends({ productId, userIds: many })))?.code, Code.InvalidArgument);
});

t.run();
