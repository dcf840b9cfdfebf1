import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { toTimestamp } from "@meter/lib/time";
import { rpcCode } from "../../../test/support/rpc.ts";
import { withTenancy, type TenancySuite } from "../testing/suite.ts";
import { KEYS_PER_PRODUCT_MAX } from "./create-api-key.ts";

const t = suite<TenancySuite>("CreateApiKey");
withTenancy(t);

t("checks name, scope and expiry; defaults to admin; stops at the keys a product may hold", async ({ client }) => {
  const productId = (await client.createProduct({ name: "Keys" })).product!.id;
  const past = toTimestamp(new Date(Date.now() - 1_000));
  for (const req of [{ name: "" }, { name: "k".repeat(101) }, { name: "k", scope: "root" }, { name: "k", expiresAt: past }]) {
    assert.is(await rpcCode(client.createApiKey({ productId, ...req })), Code.InvalidArgument, Object.keys(req).join());
  }
  assert.is(await rpcCode(client.createApiKey({ productId: "no-such-product", name: "k" })), Code.NotFound);
  const ingest = await client.createApiKey({ productId, name: "ingest only", scope: "ingest" });
  assert.equal([ingest.key!.scope, (await client.authenticate({ apiKey: ingest.apiKey })).scope], ["ingest", "ingest"]);
  assert.is((await client.createApiKey({ productId, name: "default scope" })).key!.scope, "admin");
  // The product's own default key and these two count.
  for (let i = 3; i < KEYS_PER_PRODUCT_MAX; i++) await client.createApiKey({ productId, name: `k${i}` });
  assert.is(await rpcCode(client.createApiKey({ productId, name: "one too many" })), Code.FailedPrecondition);
});

t.run();
