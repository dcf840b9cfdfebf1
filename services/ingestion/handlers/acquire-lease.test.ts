// AcquireLease over gRPC: its checks, and what it grants (or that there is nothing to lease).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { rpcFailure } from "../../../test/support/rpc.ts";
import { productWithUser, withIngestion, type IngestionSuite } from "../testing/suite.ts";

const t = suite<IngestionSuite>("AcquireLease");
withIngestion(t);

t("refuses want below need, tokens without a model, a bad holder or ttl; an unknown user is not found", async ({ stack, ingestion }) => {
  const { productId, userId } = await productWithUser(stack, { max_spend_per_period: 10 });
  const ok = { productId, userId, holder: "h1", need: 1, want: 2 };
  for (const req of [{ need: 3 }, { wantTokens: 10n }, { holder: "not a lease id" }, { ttlMs: -1n }, { model: "" }]) {
    assert.is((await rpcFailure(ingestion.acquireLease({ ...ok, ...req })))?.code, Code.InvalidArgument, Object.keys(req)[0]);
  }
  assert.is((await rpcFailure(ingestion.acquireLease({ ...ok, userId: "nobody" })))?.code, Code.NotFound);
});

t("a user with no cap has nothing to lease; a capped one is granted spend and the capped model's tokens", async ({ stack, ingestion }) => {
  const free = await productWithUser(stack);
  assert.is((await ingestion.acquireLease({ productId: free.productId, userId: free.userId, holder: "h1", need: 1, want: 2 })).limited, false);

  const { productId, userId } = await productWithUser(stack, { max_spend_per_period: 10, model_limits: { "gpt-4o": { max_tokens_per_period: 1_000 } } });
  const res = await ingestion.acquireLease({ productId, userId, holder: "h1", need: 1, want: 2, model: "gpt-4o", needTokens: 10n, wantTokens: 100n });
  assert.is(res.limited, true);
  const lease = res.lease!;
  assert.equal([lease.leaseId, lease.spendLimited, lease.tokens?.model], ["h1", true, "gpt-4o"]);
  assert.ok(lease.granted >= 1 && lease.granted <= 2, `granted ${lease.granted}`);
  assert.ok(lease.tokens!.granted >= 10n && lease.tokens!.granted <= 100n, `tokens granted ${lease.tokens!.granted}`);
});

t.run();
