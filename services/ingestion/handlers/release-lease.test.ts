// ReleaseLease over gRPC: its checks, and that the lease keeps what its holder used.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { productWithUser, withIngestion, type IngestionSuite } from "../testing/suite.ts";

const t = suite<IngestionSuite>("ReleaseLease");
withIngestion(t);

t("keeps what the holder used and gives the rest back; refuses a bad lease id or too many models; an unknown lease is not found", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, { max_spend_per_period: 10, model_limits: { "gpt-4o": { max_tokens_per_period: 1_000 } } });
  const acquired = await ingestion.acquireLease({ productId, userId, holder: "h1", need: 2, want: 2, model: "gpt-4o", needTokens: 100n, wantTokens: 100n });
  assert.is(acquired.lease!.granted, 2);
  const released = await ingestion.releaseLease({ productId, userId, leaseId: "h1", used: 0.5, usedTokens: { "gpt-4o": 40n, "not-capped": 5n } });
  assert.equal([released.lease!.leaseId, released.lease!.granted, released.lease!.spendLimited], ["h1", 0.5, true]);
  const models = Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`m${i}`, 1n]));
  for (const req of [{ leaseId: "not a lease id" }, { usedTokens: models }, { used: -1 }]) {
    assert.is((await rpcFailure(ingestion.releaseLease({ productId, userId, leaseId: "h1", used: 0, ...req })))?.code, Code.InvalidArgument, Object.keys(req)[0]);
  }
  assert.is((await rpcFailure(ingestion.releaseLease({ productId, userId, leaseId: "h-never", used: 0 })))?.code, Code.NotFound);
});

t.run();
