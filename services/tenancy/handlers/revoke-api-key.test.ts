import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { toTimestamp } from "@meter/lib/time";
import { rpcCode } from "../../../test/support/rpc.ts";
import { withTenancy, type TenancySuite } from "../testing/suite.ts";

const t = suite<TenancySuite>("RevokeApiKey");
withTenancy(t);

t("revokes a key for good, never the last usable admin key, and not another product's key", async ({ client }) => {
  const { product, apiKey } = await client.createProduct({ name: "Revoke" });
  const productId = product!.id;
  const first = (await client.authenticate({ apiKey })).keyId;
  // An ingest key and an admin key that has expired do not keep the product administrable.
  await client.createApiKey({ productId, name: "ingest", scope: "ingest" });
  assert.is(await rpcCode(client.revokeApiKey({ productId, keyId: first })), Code.Aborted);
  const other = await client.createProduct({ name: "Other" });
  assert.is(await rpcCode(client.revokeApiKey({ productId: other.product!.id, keyId: first })), Code.NotFound);
  const second = await client.createApiKey({ productId, name: "admin 2", expiresAt: toTimestamp(new Date(Date.now() + 3_600_000)) });
  await client.revokeApiKey({ productId, keyId: first });
  assert.is(await rpcCode(client.authenticate({ apiKey })), Code.Unauthenticated);
  assert.is(await rpcCode(client.revokeApiKey({ productId, keyId: first })), Code.NotFound);
  assert.is(await rpcCode(client.revokeApiKey({ productId, keyId: second.key!.id })), Code.Aborted);
});

t.run();
