import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Code } from "@connectrpc/connect";
import { fromTimestamp, toTimestamp } from "@meter/lib/time";
import { eventually } from "../../../test/support/eventually.ts";
import { rpcCode } from "../../../test/support/rpc.ts";
import { withTenancy, type TenancySuite } from "../testing/suite.ts";

const t = suite<TenancySuite>("Authenticate");
withTenancy(t);

t("answers a key's product, scope and expiry and records its use; refuses a malformed, unknown, revoked or expired key", async ({ client }) => {
  const { product, apiKey } = await client.createProduct({ name: "Auth" });
  const expiresAt = new Date(Date.now() + 1_500);
  const short = await client.createApiKey({ productId: product!.id, name: "short", scope: "ingest", expiresAt: toTimestamp(expiresAt) });
  const auth = await client.authenticate({ apiKey: short.apiKey });
  assert.equal([auth.productId, auth.keyId, auth.scope, fromTimestamp(auth.expiresAt)?.getTime()], [product!.id, short.key!.id, "ingest", expiresAt.getTime()]);
  const used = (await client.listApiKeys({ productId: product!.id })).keys.find((k) => k.id === short.key!.id);
  assert.ok(used?.lastUsedAt, "last use recorded");
  assert.is(await rpcCode(client.authenticate({ apiKey: "hello" })), Code.Unauthenticated);
  assert.is(await rpcCode(client.authenticate({ apiKey: apiKey.slice(0, -4) + "AAAA" })), Code.Unauthenticated);
  await client.revokeApiKey({ productId: product!.id, keyId: (await client.createApiKey({ productId: product!.id, name: "gone" })).key!.id });
  await eventually(async () => (await rpcCode(client.authenticate({ apiKey: short.apiKey }))) === Code.Unauthenticated, 10_000, "the key to expire");
});

t.run();
